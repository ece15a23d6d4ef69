"""`manage.py renderunit PROFILE [--version N]`: print the unit a profile version renders
to, byte for byte as stored (what a deploy would push)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError, CommandParser

from units.models import ProfileVersion, ServiceProfile


class Command(BaseCommand):
    help = "Print the systemd unit of a profile (latest version, or --version N)."

    def create_parser(self, prog_name: str, subcommand: str, **kwargs: object) -> CommandParser:
        # Django's own `--version` (print Django's version) would shadow ours.
        return super().create_parser(prog_name, subcommand, conflict_handler="resolve", **kwargs)

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("profile", help="profile name (the unit name without .service)")
        parser.add_argument("--version", type=int, dest="number", help="version number")

    def handle(self, *args: object, **options: object) -> None:
        name = str(options["profile"])
        number = options.get("number")
        profile = ServiceProfile.objects.filter(name=name).first()
        if profile is None:
            raise CommandError(f"no profile named {name!r}", returncode=2)
        versions = ProfileVersion.objects.filter(profile=profile)
        version = (
            versions.filter(number=number).first()
            if number is not None
            else versions.order_by("-number").first()
        )
        if version is None:
            latest = versions.order_by("-number").first()
            have = f"it has v1..v{latest.number}" if latest else "it has no versions"
            raise CommandError(f"profile {name!r} has no version {number} ({have})", returncode=2)
        self.stdout.write(version.unit_text, ending="")
