"""``/docs``: the OpenAPI page, working offline and saying how to authorise.

FastAPI's own page loads Swagger UI from a CDN, so it is blank on a machine
without the internet, and it sat behind the API key, so a user could not read
how to send the key. Here the page and ``/openapi.json`` are public (they
describe the API, not the index), Swagger UI's files come from the
``fastapi-offline`` package and are served by gearag at :data:`ASSETS`, and the schema declares the two ways
to send the key, so the page's **Authorize** button takes it once for every
call made from the page.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.openapi.utils import get_openapi
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

#: URL prefix of Swagger UI's script, style and icon.
ASSETS = "/docs-assets"
#: The schemes a client sends the API key with (``gearag.server.auth``).
SECURITY_SCHEMES = {
    "bearer": {"type": "http", "scheme": "bearer", "description": "Authorization: Bearer KEY ($GEARAG_API_KEY)."},
    "apiKey": {"type": "apiKey", "in": "header", "name": "X-API-Key", "description": "X-API-Key: KEY."},
}


def assets_dir() -> Path:
    """The directory of Swagger UI's files inside the installed ``fastapi_offline`` package."""
    return Path(str(files("fastapi_offline") / "static"))


def install(app: FastAPI) -> None:
    """Serve ``/docs`` with local assets and an OpenAPI schema that declares the API key."""
    app.mount(ASSETS, StaticFiles(directory=assets_dir()), name="docs-assets")

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
            schema.setdefault("components", {})["securitySchemes"] = SECURITY_SCHEMES
            schema["security"] = [{"bearer": []}, {"apiKey": []}]
            for path in ("/health",):  # public: no key needed
                for operation in schema.get("paths", {}).get(path, {}).values():
                    operation["security"] = []
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]

    @app.get("/docs", include_in_schema=False)
    def _docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=app.openapi_url or "/openapi.json", title="gearag — API",
            swagger_js_url=f"{ASSETS}/swagger-ui-bundle.js", swagger_css_url=f"{ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{ASSETS}/favicon.png",
            swagger_ui_parameters={"persistAuthorization": False, "tryItOutEnabled": True},
        )
