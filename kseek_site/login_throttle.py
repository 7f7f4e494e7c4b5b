"""The two pieces of the login throttle that are ours; django-axes does the counting and the locking.

- `client_ip`: the address a failed login is counted against. It is REMOTE_ADDR unless the operator says how many
  proxies stand in front of the server (KSEEK_TRUSTED_PROXIES): only then is X-Forwarded-For read, and only the
  entry those proxies wrote, since anything further left came from the client and can be forged.
- `lockout_response`: the page a locked-out login gets, saying for how long and what to do.
"""

import ipaddress

from django.conf import settings
from django.shortcuts import render


def client_ip(request) -> str:
    remote = request.META.get("REMOTE_ADDR", "")
    hops = settings.KSEEK_TRUSTED_PROXIES
    if not hops:
        return remote
    forwarded = [part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if part.strip()]
    # Each proxy appends the address it received the request from: with N proxies, the client's is the Nth entry
    # from the right. A request with fewer entries did not come through them all; it is counted against the
    # address it came from, which is the stricter choice (the proxy's address is shared by every client).
    if len(forwarded) < hops:
        return remote
    candidate = forwarded[-hops]
    try:
        return str(ipaddress.ip_address(candidate))
    except ValueError:
        return remote


def lockout_response(request, original_response=None, credentials=None):
    from axes.helpers import get_client_username, get_cool_off

    cool_off = get_cool_off(request)
    return render(
        request,
        "registration/locked_out.html",
        {
            "username": get_client_username(request, credentials) or "",
            "failure_limit": settings.AXES_FAILURE_LIMIT,
            "cooloff_minutes": round(cool_off.total_seconds() / 60) if cool_off else None,
        },
        status=settings.AXES_HTTP_RESPONSE_CODE,
    )
