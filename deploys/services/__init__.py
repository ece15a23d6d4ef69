"""Writes of the deploys app, one module per subject (HackSoft styleguide, "Modules"):
`deploys.services.hosts` and `deploys.services.deploy_requests`. Import from those modules;
the read-only approval rules are in `deploys.approvals`, permissions in
`deploys.permissions`.
"""
