"""Holds the server's answers to docs/openapi.json (#15): every response a
test receives goes through OpenApiValidator.check, which fails unless the
document describes it: the path and method, the status, the headers it
requires (X-Request-Id everywhere, Retry-After on 503), the content type and,
for JSON, the body against the response's schema (JSON Schema 2020-12, with
python3-jsonschema from Debian). So the document cannot drift from the code.

Beyond what each operation lists, the document says in words that an unknown
path is 404 and a method a path does not have is 405 (with Allow): those two
are checked here as that rule, with the Error schema.
"""
import json
import os
import re

import jsonschema

DOC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "openapi.json")


class OpenApiMismatch(AssertionError):
    pass


class OpenApiValidator:
    def __init__(self, doc_path=DOC):
        with open(doc_path) as f:
            self.doc = json.load(f)
        self.resolver = jsonschema.RefResolver(base_uri="", referrer=self.doc)
        self.paths = []
        for template, item in self.doc["paths"].items():
            segments = ["[^/]+" if seg.startswith("{") else re.escape(seg) for seg in template.split("/")]
            pattern = "^" + "/".join(segments) + "$"
            self.paths.append((re.compile(pattern), template, item))
        self.count = 0
        self.by_status = {}

    def _deref(self, obj):
        while isinstance(obj, dict) and "$ref" in obj:
            _, obj = self.resolver.resolve(obj["$ref"])
        return obj

    def _validate(self, schema, value, where):
        try:
            jsonschema.validators.Draft202012Validator(schema, resolver=self.resolver).validate(value)
        except jsonschema.ValidationError as e:
            raise OpenApiMismatch("%s: body does not match the document: %s" % (where, e.message))

    def _error_body(self, raw, where):
        try:
            body = json.loads(raw)
        except ValueError:
            raise OpenApiMismatch("%s: error body is not JSON: %r" % (where, raw[:200]))
        self._validate({"$ref": "#/components/schemas/Error"}, body, where)

    def check(self, method, target, status, headers, raw):
        """headers: a dict with lower-case names; raw: the body bytes."""
        method = method.upper()
        path = target.split("?", 1)[0]
        where = "%s %s -> %d" % (method, path, status)
        headers = {k.lower(): v for k, v in headers.items()}
        if "x-request-id" not in headers or not re.fullmatch(r"[A-Za-z0-9._:/+=@-]{1,128}", headers["x-request-id"]):
            raise OpenApiMismatch("%s: no valid X-Request-Id header" % where)
        self.count += 1
        self.by_status[status] = self.by_status.get(status, 0) + 1
        match = next(((t, item) for rx, t, item in self.paths if rx.match(path)), None)
        if match is None:
            if status != 404:
                raise OpenApiMismatch("%s: a path the document does not have, answered other than 404" % where)
            return self._error_body(raw, where)
        template, item = match
        op = item.get("get" if method == "HEAD" else method.lower())
        if op is None:
            if status != 405 or "allow" not in headers:
                raise OpenApiMismatch("%s: a method %s does not have, answered other than 405 with Allow" % (where, template))
            return self._error_body(raw, where)
        response = op["responses"].get(str(status))
        if response is None:
            raise OpenApiMismatch("%s: status %d is not documented for %s %s (has %s)" %
                                  (where, status, method, template, sorted(op["responses"])))
        response = self._deref(response)
        for name, spec in response.get("headers", {}).items():
            spec = self._deref(spec)
            # Retry-After is required unless the document says otherwise
            # (429: set for rate_limited, not for quota_exceeded).
            if (name.lower() in ("x-request-id", "retry-after") and spec.get("required", True)
                    and name.lower() not in headers):
                raise OpenApiMismatch("%s: header %s missing" % (where, name))
        content = response.get("content")
        if method == "HEAD":
            if raw:
                raise OpenApiMismatch("%s: HEAD answered with a body" % where)
            return
        if not content:
            if raw:
                raise OpenApiMismatch("%s: the document says no body, got %r" % (where, raw[:100]))
            return
        ctype = headers.get("content-type", "").split(";")[0].strip()
        if ctype not in content:
            raise OpenApiMismatch("%s: content type %r, the document has %s" % (where, ctype, sorted(content)))
        if ctype == "application/json":
            try:
                body = json.loads(raw)
            except ValueError:
                raise OpenApiMismatch("%s: body is not JSON: %r" % (where, raw[:200]))
            self._validate(content[ctype]["schema"], body, where)

    def summary(self):
        return "%d responses validated against docs/openapi.json (by status: %s)" % (
            self.count, ", ".join("%d: %d" % kv for kv in sorted(self.by_status.items())))
