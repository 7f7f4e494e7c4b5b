"""Who may do what: three roles, each including the ones below it.

viewer    sees every page (any signed-in user is a viewer)
reviewer  also decides questions and sends messages to runs
operator  also starts, pauses, resumes and stops runs, imports traces and manages worker tokens

Roles are Django groups of these names (migration 0003 makes them); superusers hold every role. Pages, forms
and sockets all check through `has_role`, on the server.
"""

from functools import wraps

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied

VIEWER, REVIEWER, OPERATOR = "viewer", "reviewer", "operator"
ROLE_ORDER = [VIEWER, REVIEWER, OPERATOR]


def roles_of(user) -> set[str]:
    """Every role the user holds, the implied lower ones included."""
    if user is None or not user.is_authenticated or not user.is_active:
        return set()
    if user.is_superuser:
        return set(ROLE_ORDER)
    names = set(user.groups.values_list("name", flat=True))
    highest = max((ROLE_ORDER.index(n) for n in names if n in ROLE_ORDER), default=0)
    return set(ROLE_ORDER[: highest + 1])


def has_role(user, role: str) -> bool:
    if role not in ROLE_ORDER:
        raise ValueError(f"unknown role {role!r}")
    # Cached on the user object: a page asks several times (navigation, buttons).
    cached = getattr(user, "_kseek_roles", None)
    if cached is None:
        cached = roles_of(user)
        if user is not None and getattr(user, "is_authenticated", False):
            user._kseek_roles = cached
    return role in cached


def role_required(role: str):
    """Sign-in first (redirect to the login page), then the role (403 if missing)."""

    def decorate(view):
        @wraps(view)
        def checked(request, *args, **kwargs):
            if not has_role(request.user, role):
                raise PermissionDenied(f"this needs the {role} role")
            return view(request, *args, **kwargs)

        return login_required(checked)

    return decorate
