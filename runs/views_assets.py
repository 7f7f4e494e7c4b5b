"""Assets from installed packages: plotly.js from the plotly package's own copy, Pygments' stylesheet.

Served by a view rather than copied into static/, so the file is always the installed package's and nothing comes
from a CDN. Both are cached by the browser for a day. plotly.min.js is 4.8 MB: a browser that takes gzip gets it
compressed (about 1.4 MB), compressed once per server process at its first request and then held in memory.
"""

import gzip
from functools import lru_cache
from pathlib import Path

import plotly
from django.http import FileResponse, HttpResponse
from django.utils.cache import patch_vary_headers
from django.views.decorators.cache import cache_control
from django.views.decorators.http import require_safe
from pygments.formatters import HtmlFormatter

PLOTLY_JS = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
JS = "text/javascript; charset=utf-8"


@lru_cache(maxsize=1)
def _plotly_gzip() -> bytes:
    # mtime=0: the same bytes from every process, so a proxy or the browser sees one file.
    return gzip.compress(PLOTLY_JS.read_bytes(), compresslevel=9, mtime=0)


def _accepts_gzip(request) -> bool:
    """Whether Accept-Encoding lists gzip (or *) with a quality above zero ("gzip;q=0" refuses it)."""
    for offer in request.headers.get("Accept-Encoding", "").split(","):
        coding, *params = [part.strip() for part in offer.split(";")]
        if coding.lower() not in ("gzip", "*"):
            continue
        quality = next((p[2:] for p in params if p.lower().startswith("q=")), "1")
        try:
            return float(quality) > 0
        except ValueError:
            return False
    return False


@require_safe
@cache_control(max_age=86400, public=True)
def plotly_js(request):
    if _accepts_gzip(request):
        response = HttpResponse(_plotly_gzip(), content_type=JS)
        response["Content-Encoding"] = "gzip"
    else:
        response = FileResponse(open(PLOTLY_JS, "rb"), content_type=JS)
    patch_vary_headers(response, ["Accept-Encoding"])
    return response


@lru_cache(maxsize=1)
def _pygments_css() -> str:
    return HtmlFormatter(style="default").get_style_defs(".source")


@require_safe
@cache_control(max_age=86400, public=True)
def pygments_css(request):
    return HttpResponse(_pygments_css(), content_type="text/css; charset=utf-8")
