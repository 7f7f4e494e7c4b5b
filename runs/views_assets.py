"""Assets from installed packages: plotly.js from the plotly package's own copy, Pygments' stylesheet.

Served by a view rather than copied into static/, so the file is always the installed package's and nothing comes
from a CDN. Both are cached by the browser for a day.
"""

from functools import lru_cache
from pathlib import Path

import plotly
from django.http import FileResponse, HttpResponse
from django.views.decorators.cache import cache_control
from pygments.formatters import HtmlFormatter

PLOTLY_JS = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


@cache_control(max_age=86400, public=True)
def plotly_js(request):
    return FileResponse(open(PLOTLY_JS, "rb"), content_type="text/javascript; charset=utf-8")


@lru_cache(maxsize=1)
def _pygments_css() -> str:
    return HtmlFormatter(style="default").get_style_defs(".source")


@cache_control(max_age=86400, public=True)
def pygments_css(request):
    return HttpResponse(_pygments_css(), content_type="text/css; charset=utf-8")
