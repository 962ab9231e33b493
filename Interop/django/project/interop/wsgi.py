"""WSGI entry point (runserver uses it through WSGI_APPLICATION)."""
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "interop.settings")
application = get_wsgi_application()
