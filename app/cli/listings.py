"""`python -m app scenarios|criteria|models|templates`: what there is to judge with."""

from __future__ import annotations

import argparse
import json

from app.catalog.scenarios import load_catalog
from app.formats.prompts import get_template, template_names


def add_listing_parsers(commands: argparse._SubParsersAction) -> None:
    scenarios = commands.add_parser("scenarios", help="list scenarios by group")
    scenarios.add_argument("--search", help="only scenarios matching this text")
    scenarios.add_argument("--criteria", action="store_true", help="show each scenario's criteria")
    scenarios.set_defaults(handler=list_scenarios)

    criteria = commands.add_parser("criteria", help="list the criteria library by category")
    criteria.set_defaults(handler=list_criteria)

    models = commands.add_parser("models", help="list judge models in the registry")
    models.set_defaults(handler=list_models)

    templates = commands.add_parser("templates", help="list prompt templates")
    templates.set_defaults(handler=list_templates)


def list_scenarios(args: argparse.Namespace) -> int:
    catalog = load_catalog()
    shown = {s.id for s in catalog.search(args.search or "")}
    total = 0
    for group, ids in catalog.groups.items():
        members = [catalog.scenarios[i] for i in ids if i in shown]
        if not members:
            continue
        print(f"{group} ({len(members)})")
        for scenario in members:
            total += 1
            print(f"  {scenario.id:<38} {scenario.description}")
            if args.criteria:
                print(f"  {'':<38} criteria: {', '.join(scenario.criteria)}")
    groups = sum(1 for ids in catalog.groups.values() if any(i in shown for i in ids))
    print(f"{total} scenarios in {groups} groups")
    return 0


def list_criteria(args: argparse.Namespace) -> int:
    catalog = load_catalog()
    for category, criteria in catalog.criteria_by_category().items():
        print(f"{category} ({len(criteria)})")
        for criterion in criteria:
            print(f"  {criterion.id:<32} {criterion.description}")
    print(f"{len(catalog.criteria)} criteria")
    return 0


def list_models(args: argparse.Namespace) -> int:
    from models.registry import load_registry

    registry = load_registry()
    for entry in registry.models:
        path = entry.path()
        state = "built" if path is not None and path.exists() else "not built (make models)"
        if entry.backend == "openai":
            state = f"server {entry.base_url}"
        marks = " [default]" if entry.name == registry.default else ""
        trained = "trained judge" if entry.trained_for_judging else "NOT trained for judging"
        print(f"{entry.name}{marks}: {entry.backend}, {trained}, {state}")
        print(f"  {entry.description}")
    return 0


def list_templates(args: argparse.Namespace) -> int:
    for name in template_names():
        template = get_template(name)
        protocols = ", ".join(p.value for p in template.protocols)
        about = {"name": name, "protocols": protocols, "reply": template.reply_format}
        print(json.dumps({**about, "about": template.description}))
    return 0
