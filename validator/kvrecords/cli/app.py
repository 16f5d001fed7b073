"""The ``kvrecords`` click group: every command line but pre-commit's plain ``validate FILE...``
(``main.main``). The commands live by family in the modules below; each imports its heavy
modules inside the command, so that ``kvrecords --help`` stays fast.
"""

from __future__ import annotations

import click

from kvrecords.cli import (
    dataset_commands,
    kv_command,
    plan_command,
    publish_commands,
    record_commands,
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="kv-efficiency-records")
def cli() -> None:
    """KV-cache efficiency records: validate the dataset and show its arithmetic."""


for command in (
    dataset_commands.validate,
    dataset_commands.fmt,
    dataset_commands.migrate,
    dataset_commands.docs,
    dataset_commands.rules,
    dataset_commands.metrics,
    kv_command.kv,
    plan_command.plan,
    record_commands.new,
    record_commands.explain,
    record_commands.review,
    publish_commands.export,
    publish_commands.site,
    publish_commands.model,
):
    cli.add_command(command)


def run_click(args: list[str]) -> int:
    """Every command line but pre-commit's plain ``validate FILE...`` (``main.main``)."""
    try:
        code = cli.main(args, prog_name="kvrecords", standalone_mode=False)
    except click.exceptions.Abort:
        return 2
    except click.ClickException as error:
        error.show()
        return 2
    return code if isinstance(code, int) else 0
