"""Behind a TLS proxy (KSEEK_BEHIND_TLS_PROXY): say in the log when a request arrives without X-Forwarded-Proto.

Django then takes the request for plain http and redirects it to https; if the proxy never sets the header, every
request comes back through it the same way and browsers stop at "too many redirects", with nothing but 301s in the
server's log. The proxy's configuration is the usual cause (docs/deployment.md: it must set the header), so the
first such request of each process is logged with what to fix; the response is left as it was (a health check
that reaches daphne directly without the header gets its redirect, as documented).
"""

import logging

log = logging.getLogger("kseek_site.proxy")


class MissingForwardedProtoWarning:
    def __init__(self, get_response):
        self.get_response = get_response
        self.warned = False

    def __call__(self, request):
        if not self.warned and "HTTP_X_FORWARDED_PROTO" not in request.META:
            self.warned = True  # once per process: a proxy that never sets it would fill the log
            log.warning(
                "a request to %s came without X-Forwarded-Proto: with KSEEK_BEHIND_TLS_PROXY=1 it is redirected to "
                "https, and if the proxy never sets the header (nginx: proxy_set_header X-Forwarded-Proto $scheme;) "
                "every request is, in a loop. Only the first such request of this process is logged "
                "(docs/deployment.md, 'The TLS proxy')",
                request.path,
            )
        return self.get_response(request)
