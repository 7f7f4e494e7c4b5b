"""daphne without Twisted's in-memory parse of form bodies.

Twisted's `http.Request` parses the body of every multipart/form-data POST into `request.args` with the email
package, the whole body read into memory at once, before daphne passes the body on: the server held about ten
times the upload (an 80 MB trace took daphne from 76 to 848 MiB, also when the import refused it). daphne never
reads `args`; Django parses the body itself, from a temporary file. A request made with Twisted's
`parsePOSTFormSubmission=False` skips that parse, so daphne's requests are made that way.
"""


def install() -> None:
    try:
        from daphne import http_protocol
    except ImportError:  # served by another ASGI server: nothing to change
        return
    if getattr(http_protocol.WebRequest, "form_body_unparsed", False):
        return

    class WebRequest(http_protocol.WebRequest):
        form_body_unparsed = True

        def __init__(self, *args, **kwargs):
            kwargs["parsePOSTFormSubmission"] = False
            super().__init__(*args, **kwargs)

    # daphne's HTTPFactory looks this name up for every connection it builds.
    http_protocol.WebRequest = WebRequest
