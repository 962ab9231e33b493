"""manage.py seed_interop: create (or reset) the test users and the two OAuth clients."""
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from oauth2_provider.models import get_application_model

from interop import fixtures


class Command(BaseCommand):
    help = "Create or reset the interop test users and OAuth clients (idempotent)."

    def handle(self, *args, **options):
        User = get_user_model()
        for username, password in fixtures.USERS.items():
            user, _ = User.objects.get_or_create(username=username)
            user.is_active = True
            user.set_password(password)
            user.save()

        Application = get_application_model()
        alice = User.objects.get(username="alice")
        clients = [
            (fixtures.CONFIDENTIAL_CLIENT_ID, Application.CLIENT_CONFIDENTIAL, fixtures.CONFIDENTIAL_CLIENT_SECRET),
            (fixtures.PUBLIC_CLIENT_ID, Application.CLIENT_PUBLIC, ""),
            (fixtures.SPECIAL_CLIENT_ID, Application.CLIENT_CONFIDENTIAL, fixtures.SPECIAL_CLIENT_SECRET),
            # Access tokens are RFC 9068 JWTs (interop/access_tokens.py).
            (fixtures.JWT_CLIENT_ID, Application.CLIENT_CONFIDENTIAL, fixtures.JWT_CLIENT_SECRET),
        ]
        for client_id, client_type, secret in clients:
            app = Application.objects.filter(client_id=client_id).first() or Application(client_id=client_id)
            app.name = client_id
            app.user = alice
            app.client_type = client_type
            app.authorization_grant_type = Application.GRANT_PASSWORD
            app.redirect_uris = ""
            app.skip_authorization = True
            # Stored hashed (DOT hashes client secrets on save); the plaintext is the fixture.
            app.client_secret = secret
            app.save()

        # The OpenID Connect clients: authorization code (+ PKCE, DOT's default) with `openid`, ID tokens RS256. The
        # second is for the sign-in test that hands one client's ID token to the other.
        for client_id in (fixtures.OIDC_CLIENT_ID, fixtures.OIDC_OTHER_CLIENT_ID):
            app = Application.objects.filter(client_id=client_id).first() or Application(client_id=client_id)
            app.name = client_id
            app.user = alice
            app.client_type = Application.CLIENT_PUBLIC
            app.authorization_grant_type = Application.GRANT_AUTHORIZATION_CODE
            app.redirect_uris = fixtures.OIDC_REDIRECT_URI
            app.post_logout_redirect_uris = fixtures.OIDC_POST_LOGOUT_REDIRECT_URI
            app.skip_authorization = True
            app.algorithm = Application.RS256_ALGORITHM
            app.client_secret = ""
            app.save()

        # The resource server that introspects tokens (confidential, client credentials).
        resource = Application.objects.filter(client_id=fixtures.RESOURCE_SERVER_CLIENT_ID).first() or Application(
            client_id=fixtures.RESOURCE_SERVER_CLIENT_ID
        )
        resource.name = fixtures.RESOURCE_SERVER_CLIENT_ID
        resource.user = alice
        resource.client_type = Application.CLIENT_CONFIDENTIAL
        resource.authorization_grant_type = Application.GRANT_CLIENT_CREDENTIALS
        resource.redirect_uris = ""
        resource.client_secret = fixtures.RESOURCE_SERVER_CLIENT_SECRET
        resource.save()

        # The device authorization grant's client (public).
        device = Application.objects.filter(client_id=fixtures.DEVICE_CLIENT_ID).first() or Application(
            client_id=fixtures.DEVICE_CLIENT_ID
        )
        device.name = fixtures.DEVICE_CLIENT_ID
        device.user = alice
        device.client_type = Application.CLIENT_PUBLIC
        device.authorization_grant_type = Application.GRANT_DEVICE_CODE
        device.client_secret = ""
        device.save()

        self.stdout.write(
            f"interop: seeded users {sorted(fixtures.USERS)} and clients "
            f"{fixtures.CONFIDENTIAL_CLIENT_ID} (confidential), {fixtures.PUBLIC_CLIENT_ID} (public), "
            f"{fixtures.SPECIAL_CLIENT_ID} (confidential, secret with reserved characters), "
            f"{fixtures.JWT_CLIENT_ID} (confidential, RFC 9068 JWT access tokens), "
            f"{fixtures.OIDC_CLIENT_ID} (public, authorization code + OIDC, RS256), "
            f"{fixtures.RESOURCE_SERVER_CLIENT_ID} (confidential, client credentials, introspects at /o/introspect/)"
        )
