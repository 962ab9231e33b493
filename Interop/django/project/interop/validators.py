"""DOT's validator with counters around refresh-token validation (behaviour unchanged), and RFC 9068 JWT access
tokens routed to DOT's access-token check instead of its ID-token check."""
import base64
import hashlib
import json
from datetime import timedelta

from django.db.models import F
from django.utils import timezone
from oauth2_provider.models import get_access_token_model, get_device_grant_model, get_refresh_token_model
from oauth2_provider.oauth2_validators import OAuth2Validator
from oauth2_provider.settings import oauth2_settings

from . import stats


class CountingValidator(OAuth2Validator):
    """Counts reuse detections and grace-window replays; delegates every decision to DOT."""

    def validate_device_code(self, client_id, code, request, *args, **kwargs):
        """oauthlib 4.0.1 asks the validator for a device code's status (RFC 8628 section 3.5); DOT 3.4.1 predates the
        hook (its token view answers pending, denied and expired itself before oauthlib runs), so the pinned pair
        fails with an AttributeError at the approved poll. This answers from DOT's own DeviceGrant row."""
        from oauthlib.oauth2.rfc8628.grant_types.device_code import DeviceCodeGrant

        grant = get_device_grant_model().objects.filter(device_code=code, client_id=client_id).first()
        if grant is None:
            return None
        status = {
            grant.AUTHORIZED: DeviceCodeGrant.DEVICE_CODE_AUTHORIZED,
            grant.AUTHORIZATION_PENDING: DeviceCodeGrant.DEVICE_CODE_PENDING,
            grant.DENIED: DeviceCodeGrant.DEVICE_CODE_DENIED,
            grant.EXPIRED: DeviceCodeGrant.DEVICE_CODE_EXPIRED,
        }.get(grant.status)
        if status == DeviceCodeGrant.DEVICE_CODE_AUTHORIZED:
            request.user = grant.user
            request.scopes = (grant.scope or "").split()
        return status

    # Every additional claim goes into the ID token, whatever the scopes (the server offers no `profile` scope).
    oidc_claim_scope = None

    def get_additional_claims(self, request):
        """The signed-in user's profile in the ID token (OIDC Core 5.1), for the browser sign-in interop test."""
        user = request.user
        return {
            "name": user.get_full_name() or user.get_username(),
            "preferred_username": user.get_username(),
            "email": user.email or f"{user.get_username()}@interop.example",
        }

    def validate_refresh_token(self, refresh_token, client, request, *args, **kwargs):
        # Same row DOT picks: the unrevoked one, else the most recently revoked one.
        checksum = hashlib.sha256(refresh_token.encode("utf-8")).hexdigest()
        row = (
            get_refresh_token_model()
            .objects.filter(token_checksum=checksum)
            .order_by(F("revoked").desc(nulls_first=True))
            .first()
        )
        was_revoked = row is not None and row.revoked is not None
        superseded = (
            was_revoked and get_access_token_model().objects.filter(source_refresh_token=row).exists()
        )
        # A detection that kills something: the family still had a live member.
        family_live = (
            was_revoked
            and row.token_family is not None
            and get_refresh_token_model()
            .objects.filter(token_family=row.token_family, revoked__isnull=True)
            .exists()
        )
        grace_expired = was_revoked and row.revoked <= timezone.now() - timedelta(
            seconds=oauth2_settings.REFRESH_TOKEN_GRACE_PERIOD_SECONDS
        )
        ok = super().validate_refresh_token(refresh_token, client, request, *args, **kwargs)
        if was_revoked:
            if ok and superseded:
                stats.add("grace_replays")
            elif (
                not ok
                and (grace_expired or not superseded)
                and oauth2_settings.REFRESH_TOKEN_REUSE_PROTECTION
                and family_live
            ):
                stats.add("reuse_detections")
        return ok

    def validate_jwt_bearer_token(self, token, scopes, request):
        """A bearer token that looks like a JWT: an RFC 9068 access token is checked as DOT checks every access token.

        With OIDC on, DOT protects resources with oauthlib's OpenID server, whose JWTToken claims every bearer token
        that starts with `ey` and has two or four dots, and DOT answers those with `validate_id_token`: the token is
        looked up as an ID token (by `jti`), so a JWT access token would never be found. A token whose header says
        `typ: at+jwt` (interop/access_tokens.py) goes to DOT's `validate_bearer_token` instead: the stored
        AccessToken row (by SHA-256 checksum), its expiry, scopes and revocation, exactly as for opaque tokens.
        Anything else stays DOT's ID-token path.
        """
        if _jwt_type(token) == "at+jwt":
            return self.validate_bearer_token(token, scopes, request)
        return super().validate_jwt_bearer_token(token, scopes, request)


def _jwt_type(token):
    """The `typ` of a compact JWS header (unverified: it only picks which of DOT's checks runs), or None."""
    try:
        header = token.split(".", 1)[0]
        value = json.loads(base64.urlsafe_b64decode(header + "=" * (-len(header) % 4)))
    except (AttributeError, ValueError):
        return None
    typ = value.get("typ") if isinstance(value, dict) else None
    return typ.lower() if isinstance(typ, str) else None
