from django.urls import path

from .servers import fleet_server

urlpatterns = [path("", fleet_server.urls)]
