"""``grove-gitops controller``: the GitOps loop, source commits in, rendered commits out."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from grove_gitops.cli.options import JOBS_OPTION, MAX_CACHE_MB, Count, Seconds, host_port
from grove_gitops.output.parallel import default_jobs


@click.command()
@click.option(
    "--repo", required=True, help="Repository URL or local path (credentials: GROVE_GITOPS_GIT_TOKEN or git's helpers)."
)
@click.option("--source-branch", default="main", show_default=True, help="The branch of REPO holding the source tree.")
@click.option(
    "--source-path",
    default="",
    help="Directory of the source tree inside the repository; '.', './' and '' are the repository root (the default).",
)
@click.option("--output-branch", default="rendered", show_default=True, help="Same as --source-branch for folder mode.")
@click.option(
    "--output-path", default="", help="Directory of the output inside the output branch (required in folder mode)."
)
@click.option("--workdir", type=click.Path(path_type=Path), default=None, help="Private clone (default: ~/.cache).")
@click.option(
    "--once",
    is_flag=True,
    help="One iteration; exit 1 if a source commit failed to render, or while the source head does not render "
    "(also when an earlier run examined it).",
)
@click.option("--interval", default=30.0, show_default=True, type=Seconds(min=1.0), help="Seconds between iterations.")
@click.option(
    "--metrics-address",
    default="",
    callback=host_port,
    help="host:port serving /healthz and /metrics (e.g. 0.0.0.0:8080).",
)
@click.option(
    "--author",
    default="grove-gitops <grove-gitops@users.noreply.local>",
    show_default=True,
    help="Author and committer of the rendered commits, as 'Name <email>'.",
)
@click.option(
    "--hydrator-files",
    is_flag=True,
    help="Also write Argo CD Source Hydrator files (hydrator.metadata, README.md, .gitattributes) per shard.",
)
@click.option(
    "--cache-max-mb",
    type=Count(1, MAX_CACHE_MB),
    default=1024,
    show_default=True,
    help="Size bound of the render cache kept in the work directory (least recently used entries go first).",
)
@click.option(
    "--heartbeat-interval",
    type=Seconds(),
    default=600.0,
    show_default=True,
    help="Seconds between 'idle' log lines while no source commit arrives (0: none).",
)
@click.option(
    "--status-forge",
    type=click.Choice(["auto", "github", "gitlab", "off"]),
    default="auto",
    show_default=True,
    help="Post the commit status grove-gitops/render on each source commit. auto: for github.com and gitlab.com "
    "repositories when a token is set (GROVE_GITOPS_STATUS_TOKEN, else GITHUB_TOKEN / GITLAB_TOKEN).",
)
@click.option(
    "--status-api-url",
    default="",
    help="Forge API base URL (default: from --repo: api.github.com, https://HOST/api/v3 or https://HOST/api/v4); "
    "it must be on the repository's host unless --status-repo is given.",
)
@click.option(
    "--status-repo", default="", help="owner/name (GitHub) or project id or path (GitLab) (default: from --repo)."
)
@click.option("--status-target-url", default="", help="Link shown with each status (e.g. the controller's logs).")
@JOBS_OPTION
def controller(
    repo: str,
    source_branch: str,
    source_path: str,
    output_branch: str,
    output_path: str,
    workdir: Path | None,
    once: bool,
    interval: float,
    metrics_address: str,
    author: str,
    hydrator_files: bool,
    cache_max_mb: int,
    heartbeat_interval: float,
    status_forge: str,
    status_api_url: str,
    status_repo: str,
    status_target_url: str,
    jobs: int | None,
) -> None:
    """Render every new source commit of REPO and push the output for Argo CD / Flux."""
    from grove_gitops.gitops.service import run_controller

    sys.exit(
        run_controller(
            repo=repo,
            source_branch=source_branch,
            source_path=source_path,
            output_branch=output_branch,
            output_path=output_path,
            workdir=workdir,
            once=once,
            interval=interval,
            metrics_address=metrics_address,
            author=author,
            jobs=default_jobs() if jobs is None else jobs,
            hydrator=hydrator_files,
            cache_max_mb=cache_max_mb,
            heartbeat_interval=heartbeat_interval,
            status_forge=status_forge,
            status_api_url=status_api_url,
            status_repo=status_repo,
            status_target_url=status_target_url,
        )
    )
