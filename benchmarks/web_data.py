"""The web benchmark's data: 5,000 profiles and their versions, written with `bulk_create`.

A module of its own because it needs Django set up: `benchmarks/web.py` points the settings at
its throwaway database, calls `django.setup()`, then imports this.
"""

from __future__ import annotations

import hashlib
import time

from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import transaction

from linting.vllm.catalog import available_versions
from units.management.commands.loaddemo import BASELINE
from units.models import PROFILE_FIELDS, ProfileVersion, ServiceProfile
from units.profile_data import model_values, normalize_profile_data
from units.rendering import render_unit
from units.roles import OPERATOR, ensure_roles
from units.speculative import spec_methods


def populate(n_profiles: int, versions_per_profile: int, *, username: str, password: str) -> None:
    """Migrate and fill the database named by the environment (runs in this process)."""
    call_command("migrate", verbosity=0)
    user = get_user_model().objects.create_user(username, password=password)
    user.groups.add(ensure_roles()[OPERATOR])
    vllm_versions = available_versions()
    families = ["Qwen3-32B", "Llama-3.3-70B", "Kimi-K2.5-INT4", "DeepSeek-V3", "Mistral-Large"]
    started = time.perf_counter()
    profiles, datas = [], []
    for i in range(n_profiles):
        version = vllm_versions[i % len(vllm_versions)]
        family = families[i % len(families)]
        data = dict(BASELINE)
        data.update(
            name=f"vllm-{family.lower()}-{i:05d}",
            description=f"{family} service #{i} (team {i % 37})",
            model=f"/models/{family}-{i % 250}",
            served_model_names=[f"{family.lower()}-{i}"],
            port=8000 + i % 1000,
            target_vllm_version=version,
        )
        method = ["", "ngram", "eagle3", "suffix"][i % 4]
        if method == "ngram":
            data.update(spec_method="ngram", spec_num_tokens=5, spec_prompt_lookup_max=4)
        elif method == "eagle3" or (method == "suffix" and "suffix" not in spec_methods(version)):
            data.update(
                spec_method="eagle3", spec_draft_model=f"/models/eagle3-{i % 20}", spec_num_tokens=3
            )
        elif method == "suffix":
            data.update(spec_method="suffix", spec_num_tokens=8)
        data = normalize_profile_data(data)
        datas.append(data)
        profiles.append(ServiceProfile(**model_values(data), archived=(i % 50 == 49)))
    with transaction.atomic():
        ServiceProfile.objects.bulk_create(profiles, batch_size=500)
        by_name = dict(ServiceProfile.objects.values_list("name", "id"))
        batch: list[ProfileVersion] = []
        for data in datas:
            text = render_unit(data)
            digest = hashlib.sha256(text.encode()).hexdigest()
            for number in range(1, versions_per_profile + 1):
                batch.append(
                    ProfileVersion(
                        profile_id=by_name[data["name"]],
                        number=number,
                        data=data,
                        unit_text=text,
                        unit_sha256=digest,
                        changed_fields=list(PROFILE_FIELDS) if number == 1 else ["port"],
                        comment=f"bench v{number}",
                        created_by=user,
                    )
                )
            if len(batch) >= 5000:
                ProfileVersion.objects.bulk_create(batch)
                batch = []
        ProfileVersion.objects.bulk_create(batch)
    print(
        f"database: {ServiceProfile.objects.count()} profiles, "
        f"{ProfileVersion.objects.count()} versions ({time.perf_counter() - started:.1f} s)"
    )
