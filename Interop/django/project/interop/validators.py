"""DOT's validator with counters around refresh-token validation (behaviour unchanged)."""
import hashlib
from datetime import timedelta

from django.db.models import F
from django.utils import timezone
from oauth2_provider.models import get_access_token_model, get_refresh_token_model
from oauth2_provider.oauth2_validators import OAuth2Validator
from oauth2_provider.settings import oauth2_settings

from . import stats


class CountingValidator(OAuth2Validator):
    """Counts reuse detections and grace-window replays; delegates every decision to DOT."""

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
