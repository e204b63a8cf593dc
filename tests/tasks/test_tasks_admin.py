"""The tasks admin: whose, what, when; read-only; the cancel action (tasks/cancel) and the sweep (mcp_clear_tasks)."""

import asyncio
import datetime
import json
import re
import uuid
from zoneinfo import ZoneInfo

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User

from django_mcp.models import Task
from django_mcp.tasks.admin import unique_prefix_chars
from django_mcp.tasks.models import creator_fields
from django_mcp.testing import McpClient

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
async def admin_client(async_client):
    user = await sync_to_async(User.objects.create_superuser)("admin", "a@example.com", "pw")
    await async_client.aforce_login(user)
    return async_client


def mcp(client, path: str = "/mcp-tasks", **headers: str) -> McpClient:
    """The tasks server's client, as the (logged-in) ``client``'s user."""
    return McpClient(path, client=client, capabilities={"elicitation": {}}, headers=headers)


async def test_changelist_and_read_only_detail(admin_client):
    task_id = (await mcp(admin_client).astart_task("quick", {"text": "admin"}))["taskId"]
    await mcp(admin_client).await_task(task_id, "completed")
    listing = await admin_client.get("/admin/django_mcp/task/?status__exact=completed")
    assert listing.status_code == 200
    assert task_id in listing.content.decode()
    detail = await admin_client.get(f"/admin/django_mcp/task/{task_id}/change/")
    assert detail.status_code == 200
    page = detail.content.decode()
    assert "task:admin" in page and "<pre>" in page
    assert 'name="_save"' not in page  # read-only
    assert (await admin_client.get("/admin/django_mcp/task/add/")).status_code == 403
    row = await Task.objects.aget(pk=task_id)
    searched = await admin_client.get("/admin/django_mcp/task/", {"q": row.owner})
    assert task_id in searched.content.decode()


async def test_cancel_action_cancels_a_running_task(admin_client):
    running = (await mcp(admin_client).astart_task("slow", {"seconds": 30}))["taskId"]
    finished = (await mcp(admin_client).astart_task("quick"))["taskId"]
    await mcp(admin_client).await_task(finished, "completed")
    response = await admin_client.post(
        "/admin/django_mcp/task/",
        {"action": "cancel_selected", "_selected_action": [running, finished]},
        follow=True,
    )
    assert response.status_code == 200
    page = response.content.decode()
    assert "Requested cancellation of 1 task(s)." in page
    assert "1 task(s) had already finished." in page
    assert (await mcp(admin_client).await_task(running, "cancelled"))["status"] == "cancelled"
    assert (await mcp(admin_client).aget_task(finished))["status"] == "completed"


async def test_cancel_action_flags_a_task_of_another_process(admin_client):
    """No runner here: the flag in the database is what the owning process picks up."""
    task = await Task.objects.acreate(tool="slow", owner="nobody", poll_interval_ms=100, node="elsewhere")
    await admin_client.post("/admin/django_mcp/task/", {"action": "cancel_selected", "_selected_action": [task.pk]})
    await task.arefresh_from_db()
    assert task.cancel_requested is True
    assert task.status == "working"
    await asyncio.sleep(0)


async def test_view_only_staff_cannot_cancel(async_client):
    from django.contrib.auth.models import Permission

    user = await sync_to_async(User.objects.create_user)("viewer", "v@example.com", "pw", is_staff=True)
    view = await Permission.objects.aget(codename="view_task")
    await sync_to_async(user.user_permissions.add)(view)
    await async_client.aforce_login(user)
    task = await Task.objects.acreate(tool="slow", owner="x", poll_interval_ms=100)
    listing = await async_client.get("/admin/django_mcp/task/")
    assert listing.status_code == 200
    assert "cancel_selected" not in listing.content.decode()
    await async_client.post("/admin/django_mcp/task/", {"action": "cancel_selected", "_selected_action": [task.pk]})
    await task.arefresh_from_db()
    assert task.cancel_requested is False


# -- whose, what, when ---------------------------------------------------------------------------

UTC = datetime.UTC
CREATED = datetime.datetime(2026, 12, 3, 12, 41, 7, 250000, tzinfo=UTC)
EXPIRES = datetime.datetime(2031, 5, 6, 7, 8, 9, tzinfo=UTC)  # far from any test run: shown as "in N d N h"
PARIS = ZoneInfo("Europe/Paris")
LIST = "/admin/django_mcp/task/"


def rows(page: str) -> list[str]:
    """The changelist's result rows, as HTML."""
    if '<table id="result_list">' not in page:
        return []
    body = page.split('<table id="result_list">', 1)[1].split("</table>", 1)[0]
    return re.findall(r"<tr[^>]*>.*?</tr>", body.split("<tbody>", 1)[1], re.S)


def row_of(page: str, task: Task) -> str:
    found = [row for row in rows(page) if f'<code title="{task.id}"' in row]
    assert len(found) == 1, f"{task.id} in {len(found)} rows"
    return found[0]


def listed(page: str) -> set[str]:
    """The ids of the listed tasks (each the tooltip of its shown prefix)."""
    return set(re.findall(r'class="field-task_id"><a [^>]*><code title="([0-9a-f-]{36})"', page))


@pytest.fixture
def paris(settings):
    settings.TIME_ZONE = "Europe/Paris"  # UTC+1 in December


@pytest.fixture
async def people():
    ada = await sync_to_async(User.objects.create_user)(
        "ada", "ada@example.com", "pw", first_name="Ada", last_name="Lovelace"
    )
    bob = await sync_to_async(User.objects.create_user)("bob", "bob@example.com", "pw")
    return ada, bob


async def make(**fields) -> Task:
    defaults = {"tool": "slow", "owner": "sha256:" + "ab" * 32, "poll_interval_ms": 100}
    return await Task.objects.acreate(**{**defaults, **fields})


def test_every_field_says_what_it_means():
    for field in Task._meta.concrete_fields:
        assert str(field.help_text).strip(), field.name
    message = str(Task._meta.get_field("status_message").help_text)
    assert "Empty" not in message and "statusMessage" in message
    owner = str(Task._meta.get_field("owner").help_text)
    assert "digest" in owner and "never stored" in owner


async def test_the_list_answers_whose_what_when(admin_client, people, paris):
    ada, _ = people
    task = await make(
        user=ada,
        owner_kind="user",
        tool="report",
        status="input_required",
        status_message="Waiting for the quarterly figures",
        created_at=CREATED,
        updated_at=CREATED + datetime.timedelta(minutes=3, seconds=2),
        expires_at=EXPIRES,
    )
    page = (await admin_client.get(LIST)).content.decode()
    row = row_of(page, task)
    # The identity column: a prefix no other listed task shares, on one line, the whole id as a tooltip, linked.
    assert f'<code title="{task.id}" style="font-family:var(--font-family-monospace, monospace);' in row
    assert f">{task.id.hex[:8]}</code>" in row and "white-space:nowrap" in row
    assert f'href="/admin/django_mcp/task/{task.id}/change/' in row
    # Whose: the Django user, linked to their admin page; never the owner digest.
    assert f'<a href="/admin/auth/user/{ada.pk}/change/" title="Ada Lovelace · ada@example.com"' in row
    assert ">ada</a>" in row
    assert "sha256:" not in row
    # What.
    assert ">report<" in row and "Input Required" in row and "Waiting for the quarterly figures" in row
    # When: to the second, in the current time zone; updated-at is a column.
    assert ">2026-12-03 13:41:07</time>" in row  # created
    assert ">2026-12-03 13:44:09</time>" in row  # updated
    # Expires: how long from now, the exact time as a tooltip.
    expires = re.search(r'<td class="field-expires"><time datetime="[^"]+" title="([^"]+)"[^>]*>([^<]+)</time>', row)
    assert expires.group(1) == EXPIRES.astimezone(PARIS).strftime("%Y-%m-%d %H:%M:%S")
    assert re.fullmatch(r"in \d+ d \d+ h|\d+ d \d+ h ago", expires.group(2)), expires.group(2)
    assert "a.m." not in row and "p.m." not in row
    thead = page.split('<table id="result_list">', 1)[1].split("</thead>", 1)[0]
    headers = re.findall(r'<div class="text">(?:<a [^>]*>|<span>)([^<]+)<', thead)
    assert headers == ["Task", "Tool", "Status", "Who", "Status message", "Created", "Updated", "Expires"]


async def test_who_without_a_user_is_named_without_a_secret(admin_client, people):
    ada, _ = people
    anonymous = await make(owner_kind="anonymous", owner="sha256:" + "a" * 64)
    principal = await make(owner_kind="principal", owner="sha256:1234abcd" + "0" * 56)
    gone = await make(user=ada, owner_kind="user")
    legacy = await make(owner="sha256:feedc0de" + "1" * 56)
    await sync_to_async(ada.delete)()
    await gone.arefresh_from_db()
    assert gone.user is None  # SET_NULL: the task and its binding stay
    page = (await admin_client.get(LIST)).content.decode()
    assert ">anonymous</span>" in row_of(page, anonymous)
    assert f'<span title="{principal.owner}" style="white-space:nowrap">token principal</span>' in row_of(
        page, principal
    )
    assert ">deleted user</span>" in row_of(page, gone)
    assert ">feedc0de…</code>" in row_of(page, legacy)


async def test_user_without_a_user_admin_is_shown_unlinked(admin_client, people):
    from django.contrib import admin as django_admin

    ada, _ = people
    task = await make(user=ada, owner_kind="user")
    django_admin.site.unregister(User)
    try:
        page = (await admin_client.get(LIST)).content.decode()
    finally:
        from django.contrib.auth.admin import UserAdmin

        django_admin.site.register(User, UserAdmin)
    row = row_of(page, task)
    assert re.search(r'<td class="field-who"><span title="Ada Lovelace · ada@example.com" [^>]*>ada</span>', row)
    assert "/admin/auth/user/" not in row


async def test_filters_status_tool_user_kind_and_expired(admin_client, people):
    ada, bob = people
    now = datetime.datetime.now(UTC)
    adas = await make(user=ada, owner_kind="user", tool="report", status="completed")
    anon = await make(owner_kind="anonymous", tool="export")
    expired = await make(owner_kind="anonymous", tool="export", expires_at=now - datetime.timedelta(seconds=5))
    forever = await make(owner_kind="principal", tool="report", expires_at=None)

    async def ids(query: str) -> set[str]:
        response = await admin_client.get(LIST + query)
        assert response.status_code == 200
        return listed(response.content.decode())

    def short(*tasks: Task) -> set[str]:
        return {str(t.id) for t in tasks}

    assert await ids("?status__exact=completed") == short(adas)
    assert await ids("?tool=export") == short(anon, expired)
    assert await ids(f"?user__id__exact={ada.pk}") == short(adas)
    assert await ids("?owner_kind__exact=anonymous") == short(anon, expired)
    assert await ids("?owner_kind__exact=principal") == short(forever)
    assert await ids("?expired=yes") == short(expired)
    assert await ids("?expired=no") == short(adas, anon, forever)
    page = (await admin_client.get(LIST)).content.decode()
    # The user filter offers only users with tasks.
    assert f"?user__id__exact={ada.pk}" in page and f"?user__id__exact={bob.pk}" not in page
    assert "By expired" in page and "By owner kind" in page


async def test_expired_tasks_are_marked(admin_client, paris):
    now = datetime.datetime.now(UTC)
    expired = await make(status="completed", expires_at=datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC))
    live = await make(status="completed", expires_at=now + datetime.timedelta(minutes=30, seconds=30))
    forever = await make(status="working", expires_at=None)
    assert expired.is_expired() and not live.is_expired() and not forever.is_expired()
    page = (await admin_client.get(LIST)).content.decode()
    marker = '<strong class="mcp-expired" title="Expired at 2026-01-02 04:04:05"'
    assert marker in row_of(page, expired) and ">expired</strong>" in row_of(page, expired)
    assert "mcp-expired" not in row_of(page, live) + row_of(page, forever)
    assert ">in 30 min</time>" in row_of(page, live)
    assert ">never</span>" in row_of(page, forever)
    detail = (await admin_client.get(f"{LIST}{expired.pk}/change/")).content.decode()
    assert marker in detail
    assert re.search(r">2026-01-02 04:04:05</time> \(\d+ d \d+ h ago\)", detail)


@pytest.mark.parametrize(
    ("query", "hits"),
    [
        ("quarterly", {"report"}),  # the status message
        # the user's username, case-insensitively (not a hex string: "ada" is in about 1 task id in 150)
        ("LOVELACE", {"report"}),
        ("ada@example", {"report"}),  # the user's e-mail
        ("export", {"export"}),  # the tool
        ("nothing-like-this", set()),
    ],
)
async def test_search_reaches_message_user_and_tool(admin_client, query, hits):
    ada = await sync_to_async(User.objects.create_user)("lovelace", "ada@example.com", "pw")
    await make(tool="report", user=ada, owner_kind="user", status_message="Waiting for the quarterly figures")
    await make(tool="export", status_message="Step 2/3")
    page = (await admin_client.get(LIST, {"q": query})).content.decode()
    assert {re.search(r'class="field-tool_shown"><span title="([^"]+)"', row).group(1) for row in rows(page)} == hits


async def test_search_by_short_or_full_id(admin_client):
    task = await make()
    other = await make()
    for query in (task.id.hex[:8], str(task.id)):
        page = (await admin_client.get(LIST, {"q": query})).content.decode()
        assert listed(page) == {str(task.id)}, query
    assert str(other.id) not in listed((await admin_client.get(LIST, {"q": task.id.hex[:8]})).content.decode())


async def test_detail_shows_full_id_seconds_and_what_each_field_means(admin_client, people, paris):
    ada, _ = people
    task = await make(
        user=ada,
        owner_kind="user",
        status_message="Step 2/3",
        created_at=CREATED,
        updated_at=CREATED,
        lease_expires_at=CREATED + datetime.timedelta(seconds=15),
    )
    page = (await admin_client.get(f"{LIST}{task.pk}/change/")).content.decode()
    assert str(task.id) in page
    assert ">2026-12-03 13:41:07</time>" in page and ">2026-12-03 13:41:22</time>" in page
    assert "Empty: no statusMessage on the wire." not in page
    for name in (
        "status_message",
        "user",
        "owner",
        "owner_kind",
        "created_at",
        "updated_at",
        "expires_at",
        "arguments",
    ):
        assert str(Task._meta.get_field(name).help_text) in page, name  # Django does not escape help texts
    assert f'href="/admin/auth/user/{ada.pk}/change/"' in page
    assert 'name="_save"' not in page and "deletelink" not in page


SHOWN_ID = r'class="field-task_id"><a [^>]*><code [^>]*>([0-9a-f]+)</code>'


async def test_listed_ids_never_share_their_shown_prefix(admin_client):
    # Three ids alike in their first 10 hex digits (as time-ordered ids made together were): 11 are shown.
    ids = [uuid.UUID(f"0123456789{tail}{'0' * 21}") for tail in ("a", "b", "c")]
    for task_id in ids:
        await make(id=task_id)
    shown = re.findall(SHOWN_ID, (await admin_client.get(LIST)).content.decode())
    assert sorted(shown) == sorted(i.hex[:11] for i in ids)
    await Task.objects.all().adelete()
    others = [await make() for _ in range(3)]
    shown = re.findall(SHOWN_ID, (await admin_client.get(LIST)).content.decode())
    assert sorted(shown) == sorted(t.id.hex[:8] for t in others)  # random ids: 8 hex digits tell them apart


@pytest.mark.parametrize(
    "ids, chars", [([], 8), (["ab" * 16], 8), (["a" * 32, "a" * 31 + "b"], 32), (["0" * 9 + "1", "0" * 9 + "2"], 10)]
)
def test_unique_prefix_chars(ids, chars):
    assert unique_prefix_chars(ids) == chars


def test_help_texts_name_only_what_is_served():
    for field in Task._meta.concrete_fields:
        assert "tasks/result" not in str(field.help_text), field.name


# -- the detail page's cancel button: the list action's path and permission, for one task ------------

CANCEL_BUTTON = "Cancel task</button>"


async def test_the_detail_page_of_a_running_task_cancels_it(admin_client):
    task_id = (await mcp(admin_client).astart_task("slow", {"seconds": 30}))["taskId"]
    page = (await admin_client.get(f"{LIST}{task_id}/change/")).content.decode()
    assert CANCEL_BUTTON in page and f'action="{LIST}{task_id}/cancel/"' in page
    response = await admin_client.post(f"{LIST}{task_id}/cancel/", follow=True)
    assert response.redirect_chain == [(f"{LIST}{task_id}/change/", 302)]
    assert "Requested cancellation of the task." in response.content.decode()
    assert (await mcp(admin_client).await_task(task_id, "cancelled"))["status"] == "cancelled"
    page = (await admin_client.get(f"{LIST}{task_id}/change/")).content.decode()
    assert CANCEL_BUTTON not in page  # finished


async def test_a_finished_task_has_no_cancel_button_and_a_post_changes_nothing(admin_client):
    task = await make(status="completed", lease_expires_at=CREATED)
    page = (await admin_client.get(f"{LIST}{task.pk}/change/")).content.decode()
    assert CANCEL_BUTTON not in page
    response = await admin_client.post(f"{LIST}{task.pk}/cancel/", follow=True)
    assert "The task had already finished." in response.content.decode()
    await task.arefresh_from_db()
    assert (task.status, task.cancel_requested) == ("completed", False)


async def test_the_cancel_button_needs_the_cancel_permission(async_client):
    await staff(async_client, "view_task")
    task = await make(node="elsewhere")
    page = (await async_client.get(f"{LIST}{task.pk}/change/")).content.decode()
    assert CANCEL_BUTTON not in page
    assert (await async_client.post(f"{LIST}{task.pk}/cancel/")).status_code == 403
    await task.arefresh_from_db()
    assert task.cancel_requested is False


async def test_staff_with_the_cancel_permission_get_the_button(async_client):
    await staff(async_client, "view_task", "cancel_task")
    task = await make(node="elsewhere")
    page = (await async_client.get(f"{LIST}{task.pk}/change/")).content.decode()
    assert CANCEL_BUTTON in page
    await async_client.post(f"{LIST}{task.pk}/cancel/")
    await task.arefresh_from_db()
    assert task.cancel_requested is True  # the owning process picks the flag up


async def test_cancel_is_post_only_and_unknown_tasks_are_404(admin_client):
    task = await make(node="elsewhere")
    assert (await admin_client.get(f"{LIST}{task.pk}/cancel/")).status_code == 405
    await task.arefresh_from_db()
    assert task.cancel_requested is False
    assert (await admin_client.post(f"{LIST}00000000-0000-4000-8000-000000000000/cancel/")).status_code == 404


async def test_the_lease_is_shown_only_while_the_task_runs(admin_client):
    running = await make(lease_expires_at=CREATED)
    finished = await make(status="failed", lease_expires_at=CREATED)
    assert "lease expires" in (await admin_client.get(f"{LIST}{running.pk}/change/")).content.decode().lower()
    assert "lease expires" not in (await admin_client.get(f"{LIST}{finished.pk}/change/")).content.decode().lower()


# -- deleting expired tasks: the sweep, for users with the delete permission ------------------------


async def staff(client, *codenames: str) -> User:
    from django.contrib.auth.models import Permission

    user = await sync_to_async(User.objects.create_user)("staff", "s@example.com", "pw", is_staff=True)
    for codename in codenames:
        await sync_to_async(user.user_permissions.add)(await Permission.objects.aget(codename=codename))
    await client.aforce_login(user)
    return user


async def test_delete_expired_goes_through_the_sweep(admin_client, monkeypatch):
    from django_mcp.tasks import admin as tasks_admin
    from django_mcp.tasks.store import caps

    calls = []

    def spy(now=None):
        calls.append(now)
        return caps.sweep_expired(now)

    monkeypatch.setattr(tasks_admin, "sweep_expired", spy)
    now = datetime.datetime.now(UTC)
    expired = [await make(tool=f"old{i}", expires_at=now - datetime.timedelta(seconds=1)) for i in range(2)]
    live = await make(tool="new", expires_at=now + datetime.timedelta(hours=1))
    forever = await make(tool="kept", expires_at=None)
    response = await admin_client.post(
        LIST, {"action": "delete_expired", "_selected_action": [expired[0].pk, live.pk]}, follow=True
    )
    page = response.content.decode()
    assert len(calls) == 1
    assert "Deleted 2 expired task(s)." in page  # every expired task, as mcp_clear_tasks does
    assert "1 selected task(s) have not expired: kept." in page
    assert sorted([t async for t in Task.objects.values_list("tool", flat=True)]) == ["kept", "new"]
    assert forever.pk in {t async for t in Task.objects.values_list("pk", flat=True)}


async def test_delete_expired_needs_the_delete_permission(async_client):
    await staff(async_client, "view_task")
    expired = await make(expires_at=datetime.datetime.now(UTC) - datetime.timedelta(seconds=1))
    page = (await async_client.get(LIST)).content.decode()
    assert "delete_expired" not in page and "cancel_selected" not in page
    await async_client.post(LIST, {"action": "delete_expired", "_selected_action": [expired.pk]})
    assert await Task.objects.filter(pk=expired.pk).aexists()


async def test_staff_with_delete_permission_can_sweep_but_not_delete_a_task(async_client):
    await staff(async_client, "view_task", "delete_task")
    expired = await make(expires_at=datetime.datetime.now(UTC) - datetime.timedelta(seconds=1))
    running = await make()
    page = (await async_client.get(LIST)).content.decode()
    assert 'value="delete_expired"' in page
    assert "Delete expired tasks (all of them, as mcp_clear_tasks does)" in page
    assert 'value="delete_selected"' not in page  # a running task is never deleted under its runner
    response = await async_client.post(LIST, {"action": "delete_expired", "_selected_action": [expired.pk]})
    assert response.status_code == 302
    assert not await Task.objects.filter(pk=expired.pk).aexists()
    assert (await async_client.get(f"{LIST}{running.pk}/delete/")).status_code == 403


# -- recording the creator ------------------------------------------------------------------------


def test_creator_fields_name_a_user_or_a_kind_never_a_secret():
    from types import SimpleNamespace

    from django.contrib.auth.models import AnonymousUser

    from django_mcp.server.caller import caller_of

    def creator_of(auth, user):
        return creator_fields(caller_of(SimpleNamespace(auth=auth, user=user, META={})))

    ada = User(pk=7, username="ada")
    assert creator_of(ada, None) == {"user": ada, "owner_kind": "user"}  # auth returned a user
    assert creator_of("s3cret-token", ada) == {"user": None, "owner_kind": "principal"}
    assert creator_of(True, ada) == {"user": ada, "owner_kind": "user"}  # True names nobody: the session user
    assert creator_of(None, ada) == {"user": ada, "owner_kind": "user"}
    assert creator_of(None, AnonymousUser()) == {"user": None, "owner_kind": "anonymous"}
    assert creator_of(None, None) == {"user": None, "owner_kind": "anonymous"}
    assert creator_of(SimpleNamespace(principal_key="team:blue", user=ada), None) == {"user": ada, "owner_kind": "user"}
    with pytest.raises(TypeError):  # an unsaved user names nobody stable: refused, as for every per-caller rule
        creator_of(User(username="unsaved"), None)


WIRING = "mcp_task does not record Task.user / Task.owner_kind yet (creator_fields, to be wired by the lead)"


async def test_a_task_created_by_a_session_user_shows_that_user(admin_client):
    task_id = (await mcp(admin_client).astart_task("quick"))["taskId"]
    row = await Task.objects.select_related("user").aget(pk=task_id)
    assert (row.user.username if row.user else None, row.owner_kind) == ("admin", "user")


async def test_a_task_created_by_a_bearer_principal_stores_no_secret(async_client):
    client = mcp(async_client, "/mcp-principal", Authorization="Bearer alice-token")
    task_id = (await client.astart_task("quick"))["taskId"]
    row = await Task.objects.aget(pk=task_id)
    assert (row.user_id, row.owner_kind) == (None, "principal")
    stored = json.dumps([getattr(row, f.attname) for f in Task._meta.concrete_fields], default=str)
    assert "alice-token" not in stored
