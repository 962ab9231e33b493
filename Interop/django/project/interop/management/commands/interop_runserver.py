"""manage.py interop_runserver: Django's threaded runserver with a deep listen backlog.

socketserver's default backlog (Django sets 10) drops connections when a test opens
hundreds at once, and the clients then wait for SYN retransmits (1 s, 3 s, ...).
"""
from django.core.management.commands.runserver import Command as RunserverCommand
from django.core.servers.basehttp import WSGIServer


class DeepBacklogWSGIServer(WSGIServer):
    request_queue_size = 1024


class Command(RunserverCommand):
    server_cls = DeepBacklogWSGIServer
