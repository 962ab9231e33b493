from django.urls import include, path
from oauth2_provider import urls as dot_urls
from oauth2_provider import views as dot_views

from . import views

oauth_patterns = (
    [
        # DOT's own views: the authorization endpoint (needs a Django session) and OpenID Connect
        # (discovery, JWKS, userinfo); the token and revocation views are wrapped to count.
        path("authorize/", dot_views.AuthorizationView.as_view(), name="authorize"),
        *dot_urls.oidc_urlpatterns,
        path("token/", views.CountingTokenView.as_view(), name="token"),
        path("revoke_token/", views.CountingRevokeTokenView.as_view(), name="revoke-token"),
        # RFC 7662 introspection, DOT's own view: the caller authenticates as a client (HTTP Basic, or client_id and
        # client_secret in the body), or with a bearer token that has the `introspection` scope.
        path("introspect/", dot_views.IntrospectTokenView.as_view(), name="introspect"),
        # The device authorization grant (RFC 8628): the device's endpoint, and the user's code and confirmation pages.
        path("device-authorization/", views.DeviceAuthorizationView.as_view(), name="device-authorization"),
        path("device/", dot_views.DeviceUserCodeView.as_view(), name="device"),
        path(
            "device-confirm/<slug:client_id>/<slug:user_code>",
            dot_views.DeviceConfirmView.as_view(),
            name="device-confirm",
        ),
        path(
            "device-grant-status/<slug:client_id>/<slug:user_code>",
            dot_views.DeviceGrantStatusView.as_view(),
            name="device-grant-status",
        ),
    ],
    "oauth2_provider",
)

urlpatterns = [
    path("o/", include(oauth_patterns, namespace="oauth2_provider")),
    path("api/me", views.api_me),
    path("session/csrf", views.session_csrf),
    path("session/login", views.session_login),
    path("session/get-session", views.session_get),
    path("session/notes", views.session_notes),
    path("debug/stats", views.debug_stats),
    path("debug/delete_sessions", views.debug_delete_sessions),
    path("debug/reset", views.debug_reset),
    path("debug/config", views.debug_config),
    path("debug/expire_access_tokens", views.debug_expire_access_tokens),
    path("debug/age_revocations", views.debug_age_revocations),
    path("debug/signing_keys", views.debug_signing_keys),
]
