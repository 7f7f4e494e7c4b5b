"""A HEAD request gets the headers of its GET and no body.

Django answers HEAD with the GET's response and leaves dropping the body to the server. Under daphne it is dropped
only in part: Django's ASGI handler sends a body in 64 KiB pieces (a streaming one in its iterator's pieces), and
Twisted discards the first piece of a HEAD's body only, so the rest went on the wire after the headers: a HEAD of
a run's trace export sent the whole trace but its first line, one of a diff page larger than 64 KiB the page past
its first 64 KiB, one of the Plotly asset 4.7 MB. An HTTP client then reads those bytes as the start of the next
response on the connection and fails. This middleware, the outermost, empties the body itself; a response keeps
its Content-Length (the GET's), as RFC 9110 allows a HEAD's to say.
"""


class EmptyHeadBody:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if request.method != "HEAD":
            return response
        if response.streaming:
            # Its iterator is closed with the response (Django registers its close), never read.
            response.streaming_content = []
        else:
            if not response.has_header("Content-Length"):
                response["Content-Length"] = str(len(response.content))
            response.content = b""
        return response
