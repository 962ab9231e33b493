from django.apps import AppConfig


class InteropConfig(AppConfig):
    name = "interop"
    default_auto_field = "django.db.models.BigAutoField"
