"""The custom rubric editor: load a rubric file, edit it as two tables, use it, save it.

The draft shown in the editor is `st.session_state["rubric.draft"]`; the rubric the judge
uses is the stored `cfg.rubric`. Loading a file puts it in use at once; edits apply when
"Use this rubric" is clicked (they are validated like a rubric file). Files are YAML in the
form `app.catalog.rubrics.load_rubric` reads and `save_rubric` writes.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import streamlit as st
import yaml

from app.catalog.rubrics import Rubric, builtin_rubrics, load_rubric, rubric_to_dict, save_rubric
from app.ui import state
from app.ui.rubric_tables import blank_rubric, rubric_from_tables, rubric_tables
from app.ui.settings import user_rubrics_dir
from models.foundation.errors import PocketJudgeError

DRAFT = "rubric.draft"
FLASH = "rubric.flash"
UPLOADED = "rubric.uploaded_id"
VERSION = "rubric.version"  # bumped per new draft: the table editors start afresh
FIELDS = {
    "rubric_id": "id",
    "rubric_name": "name",
    "rubric_description": "description",
    "rubric_aggregate": "aggregate",
}
AGGREGATES = {"weighted_mean": "Weighted mean of the criteria", "sum": "Sum of the points"}


def rubric_files() -> dict[str, Path]:
    """Shipped rubrics, then the ones saved in the user's rubric folder."""
    files = {f"{name} (shipped)": path for name, path in builtin_rubrics().items()}
    folder = user_rubrics_dir()
    if folder.is_dir():
        for path in sorted([*folder.glob("*.yaml"), *folder.glob("*.yml")]):
            files[f"{path.stem} (saved)"] = path
    return files


def set_draft(
    rubric: Rubric, *, use: bool, message: str | None = None, fields: bool = True
) -> None:
    """Show `rubric` in the editor (dropping unapplied edits); `use` also puts it in use.

    `fields=False` leaves the id, name and description widgets alone (they already hold the
    rubric's values, and cannot be set once drawn in this run).
    """
    st.session_state[DRAFT] = rubric
    st.session_state[VERSION] = st.session_state.get(VERSION, 0) + 1
    if fields:
        for key, attribute in FIELDS.items():
            st.session_state[key] = getattr(rubric, attribute)
    if use:
        state.store("rubric", rubric)
    st.session_state[FLASH] = message


def _load(path: Path, shown_as: str | None = None) -> None:
    try:
        rubric = load_rubric(path)
    except PocketJudgeError as exc:
        text = str(exc).replace(str(path), shown_as) if shown_as else str(exc)
        st.session_state[FLASH] = f"error:Could not load the rubric: {text}"
        return
    set_draft(rubric, use=True, message=f"Loaded '{rubric.name}' from {shown_as or path}; in use.")


def _load_selected() -> None:
    files = rubric_files()
    choice = st.session_state.get("rubric_file")
    if choice in files:
        _load(files[choice])


def _load_path() -> None:
    text = str(st.session_state.get("rubric_path", "")).strip()
    if not text:
        st.session_state[FLASH] = "error:Type the path of a rubric YAML file first."
        return
    _load(Path(text).expanduser())


def _new_blank() -> None:
    set_draft(blank_rubric(), use=False, message="A new rubric to edit; click Use this rubric.")


def _load_upload(upload) -> None:
    if upload is None or st.session_state.get(UPLOADED) == upload.file_id:
        return
    st.session_state[UPLOADED] = upload.file_id
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / Path(upload.name).name
        path.write_bytes(upload.getvalue())
        _load(path, shown_as=upload.name)


def _loaders() -> None:
    with st.expander("Load a rubric", expanded=state.stored("rubric") is None):
        files = rubric_files()
        left, right = st.columns([3, 1], vertical_alignment="bottom")
        left.selectbox("Rubric file", list(files), key="rubric_file")
        right.button("Load", key="load_rubric_file", on_click=_load_selected)
        left, right = st.columns([3, 1], vertical_alignment="bottom")
        left.text_input("Or the path of a rubric YAML file", key="rubric_path")
        right.button("Load from path", key="load_rubric", on_click=_load_path)
        upload = st.file_uploader(
            "Or upload a rubric YAML file", type=["yaml", "yml"], key="rubric_upload"
        )
        _load_upload(upload)
        st.button("Start a new blank rubric", key="new_rubric", on_click=_new_blank)


def _flash() -> None:
    message = st.session_state.get(FLASH)
    if not message:
        return
    if message.startswith("error:"):
        st.error(message.removeprefix("error:"))
    else:
        st.success(message)


def _editor(draft: Rubric) -> None:
    st.subheader("Edit")
    for key, attribute in FIELDS.items():  # widget values live in the session state
        st.session_state.setdefault(key, getattr(draft, attribute))
    st.text_input("Rubric id (lowercase letters, digits, _)", key="rubric_id")
    st.text_input("Rubric name", key="rubric_name")
    st.text_area("What the rubric checks", key="rubric_description")
    aggregates = list(AGGREGATES)
    st.radio(
        "Overall score",
        aggregates,
        format_func=AGGREGATES.get,
        horizontal=True,
        key="rubric_aggregate",
    )
    criteria, levels = rubric_tables(draft)
    version = st.session_state.get(VERSION, 0)
    st.caption(
        "Criteria: one row each. Scale: the lowest and highest score. Weight: empty means "
        "the default (the first two count double in a weighted mean)."
    )
    edited_criteria = st.data_editor(
        criteria,
        num_rows="dynamic",
        hide_index=True,
        key=f"rubric_criteria_editor_{version}",
        column_config={
            "id": st.column_config.TextColumn("id", required=True),
            "name": st.column_config.TextColumn("name", required=True),
            "description": st.column_config.TextColumn("description", width="large"),
            "min": st.column_config.NumberColumn("scale min", step=1, required=True),
            "max": st.column_config.NumberColumn("scale max", step=1, required=True),
            "weight": st.column_config.NumberColumn("weight", min_value=0.0),
        },
    )
    st.caption(
        "Levels: what each score means, per criterion. Scores are one score ('4') or a range "
        "('3-4'); together they must cover the criterion's whole scale."
    )
    edited_levels = st.data_editor(
        levels,
        num_rows="dynamic",
        hide_index=True,
        key=f"rubric_levels_editor_{version}",
        column_config={
            "criterion": st.column_config.TextColumn("criterion id", required=True),
            "scores": st.column_config.TextColumn("scores", required=True),
            "description": st.column_config.TextColumn("description", width="large"),
        },
    )
    if st.button("Use this rubric", key="use_rubric", type="primary"):
        try:
            rubric = rubric_from_tables(
                st.session_state["rubric_id"],
                st.session_state["rubric_name"],
                st.session_state["rubric_description"],
                st.session_state["rubric_aggregate"],
                edited_criteria,
                edited_levels,
            )
        except (PocketJudgeError, ValueError) as exc:
            st.error(f"The rubric is not valid yet: {exc}")
            return
        set_draft(rubric, use=True, message=f"'{rubric.name}' is in use.", fields=False)
        st.rerun()


def _saver(active: Rubric) -> None:
    st.subheader("Save")
    default = str(user_rubrics_dir() / f"{active.id}.yaml")
    path_text = st.text_input("Save the rubric in use as", value=default, key="rubric_save_path")
    overwrite = st.checkbox("Replace the file if it exists", key="rubric_overwrite")
    left, right = st.columns(2)
    if left.button("Save to file", key="save_rubric"):
        path = Path(path_text.strip()).expanduser()
        if path.suffix.lower() not in (".yaml", ".yml"):
            st.error(f"{path}: give the file a .yaml name")
        elif path.exists() and not overwrite:
            st.error(f"{path} exists; tick 'Replace the file if it exists' or choose a new name")
        else:
            try:
                save_rubric(active, path)
            except OSError as exc:
                st.error(f"Could not save to {path}: {exc}")
            else:
                st.success(f"Saved to {path}")
    text = yaml.safe_dump(rubric_to_dict(active), sort_keys=False, allow_unicode=True)
    right.download_button(
        "Download YAML",
        text.encode("utf-8"),
        file_name=f"{active.id}.yaml",
        mime="application/yaml",
        key="download_rubric",
        on_click="ignore",
    )


def render_rubric_editor() -> None:
    st.caption(
        "A rubric defines its own criteria, scales and level descriptions; it replaces the "
        "scenario's criteria."
    )
    if DRAFT not in st.session_state:
        st.session_state[DRAFT] = state.stored("rubric") or blank_rubric()
    _loaders()
    _flash()
    active = state.stored("rubric")
    if active is None:
        st.info("No rubric in use yet: load one, or edit the draft and click Use this rubric.")
    else:
        st.markdown(f"In use: **{active.name}** (`{active.id}`, {len(active.criteria)} criteria)")
    _editor(st.session_state[DRAFT])
    if active is not None:
        _saver(active)
