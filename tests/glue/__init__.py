"""The Django glue: checks, settings, admin, audit, health, the test client, packaging, the house rules."""
