"""PocketJudge in the browser: `streamlit run app/ui/main.py` (or `make run`).

The entry point draws the shared configuration in the sidebar and hands over to one of
the pages in app/ui/app_pages/. Pages are thin: they build core records and configurations,
call the JudgeService (directly, or through a BatchJob), and show what comes back.
Set POCKETJUDGE_MODEL to a registry name or a .gguf path to change the default model.

The page files live in app_pages/, not pages/: Streamlit treats a `pages/` folder next to
the entry point as its older multipage layout and then runs those files directly on a
rerun, skipping this script (and with it the sidebar and the session defaults).
"""

from __future__ import annotations

import streamlit as st

from app.ui.sidebar import render_sidebar
from app.ui.state import init_state


def main() -> None:
    st.set_page_config(page_title="PocketJudge", layout="wide")
    init_state()
    # The default page is served at the root and Streamlit ignores its url_path, so its
    # own URL (/judge) is a hidden page that opens it.
    judge = st.Page("app_pages/judge.py", title="Judge one item", url_path="home", default=True)
    judge_url = st.Page(
        lambda: st.switch_page(judge), title="Judge one item", url_path="judge", visibility="hidden"
    )
    batch = st.Page("app_pages/batch.py", title="Batch", url_path="batch")
    runs = st.Page("app_pages/runs.py", title="Runs", url_path="runs")
    criteria = st.Page("app_pages/criteria.py", title="Scenario and criteria", url_path="criteria")
    about = st.Page("app_pages/about.py", title="About and help", url_path="about")
    page = st.navigation(
        {"Judge": [judge, batch, runs, judge_url], "Set up": [criteria], "Help": [about]}
    )
    render_sidebar(criteria)
    page.run()


main()
