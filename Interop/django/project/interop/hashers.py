"""A deliberately cheap password hasher: the test user and the client secret are checked on
every token request, and the default 1,000,000 PBKDF2 rounds cost ~0.5 s each on a shared
machine. Test-only, like everything in this project."""
from django.contrib.auth.hashers import PBKDF2PasswordHasher


class FastPBKDF2PasswordHasher(PBKDF2PasswordHasher):
    algorithm = "pbkdf2_sha256_interop"
    iterations = 1000
