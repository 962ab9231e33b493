from django.urls import include, path

from . import views

oauth_patterns = (
    [
        path("token/", views.CountingTokenView.as_view(), name="token"),
        path("revoke_token/", views.CountingRevokeTokenView.as_view(), name="revoke-token"),
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
]
