"""docs/deployment.md shows the nginx configuration a team copies, and it is the file the TLS test runs
(deploy/nginx/kernelseek.conf, tests/reliability/test_tls_proxy.py): the two cannot drift apart."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_deployment_guide_shows_the_nginx_configuration_the_tls_test_runs():
    guide = (ROOT / "docs" / "deployment.md").read_text()
    template = (ROOT / "deploy" / "nginx" / "kernelseek.conf").read_text()
    assert f"```nginx\n{template}```" in guide, (
        "docs/deployment.md's nginx block differs from deploy/nginx/kernelseek.conf"
    )
