"""fedplan planner page (the app's home page, opened by ``streamlit run app.py``).

The user states a privacy budget (ε, δ), a data set, the number
of clients and a compute budget, picks a recipe, and gets the schedule table, the headline numbers
(the ε the paper's bound claims next to the tight accountant's), every hypothesis checked, and CSV /
JSON / YAML downloads. The page is thin over :mod:`planner.recipes`; the other pages (sidebar) hold
the accountant, one page per paper and the validation by simulation.
"""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from fedplan.planner.display import epsilon_text, parse_number, parse_whole
from fedplan.planner.export import render
from fedplan.planner.recipes import RECIPES, RecipeInputs, plan
from fedplan.planner.uploads import UPLOAD_SUFFIXES, dataset_from_upload

st.set_page_config(page_title="fedplan: planner", layout="wide")

DATA_SOURCES = ("Synthetic logistic data", "A scikit-learn bundled data set", "Upload a LIBSVM or CSV file")


@st.cache_data(show_spinner=False, max_entries=16)
def synthetic_data(examples: int, features: int, seed: int):
    from fedplan.planner.datasets import synthetic_logistic

    return synthetic_logistic(examples, features, seed=seed)


@st.cache_data(show_spinner=False, max_entries=8)
def bundled_data(name: str):
    from fedplan.planner.simulate.data import load_dataset

    dataset = load_dataset(name, test_fraction=0.0)
    return dataset.X_train, dataset.y_train


@st.cache_data(show_spinner=False, max_entries=8)
def uploaded_data(filename: str, content: bytes):
    return dataset_from_upload(filename, content)


@st.cache_data(show_spinner=False, max_entries=32)
def cached_plan(recipe: str, inputs: dict, X, y):
    return plan(recipe, RecipeInputs(X=X, y=y, **inputs))




def data_inputs() -> tuple[str, object, object]:
    source = st.radio("Data", DATA_SOURCES)
    if source == DATA_SOURCES[0]:
        examples = parse_whole("examples", st.text_input("Examples", "50000"))
        features = parse_whole("features", st.text_input("Features", "20"))
        if not 2 <= examples <= 2_000_000 or not 1 <= features <= 1000:
            raise ValueError("synthetic data: examples must be in [2, 2000000] and features in [1, 1000]; "
                             f"got {examples} and {features}")
        X, y = synthetic_data(examples, features, 0)
        return f"synthetic ({examples} × {features})", X, y
    if source == DATA_SOURCES[1]:
        from fedplan.planner.simulate.data import SKLEARN_SETS

        name = st.selectbox("Data set (standardised features)", list(SKLEARN_SETS))
        X, y = bundled_data(name)
        return name, X, y
    upload = st.file_uploader("LIBSVM or CSV file", type=[suffix.lstrip(".") for suffix in UPLOAD_SUFFIXES])
    if upload is None:
        raise ValueError("upload a data set, or choose synthetic data")
    X, y = uploaded_data(upload.name, upload.getvalue())
    return upload.name, X, y


def request_inputs() -> tuple[str, dict, object, object]:
    st.subheader("Your run")
    epsilon = parse_number("target_epsilon", st.text_input("Privacy budget ε", "1"))
    delta = parse_number("target_delta", st.text_input("δ", "1e-6"))
    name, X, y = data_inputs()
    clients = parse_whole("clients", st.text_input("Clients", "5"))
    epochs = parse_number("epochs", st.text_input("Compute budget: passes over each client's data", "2.5"))
    batch_size = parse_whole("batch_size", st.text_input("Batch size (van Dijk: the initial sample size s₀)", "16"))
    recipe = st.selectbox("Recipe", list(RECIPES), format_func=lambda key: RECIPES[key][0])
    inputs = {"target_epsilon": epsilon, "target_delta": delta, "clients": clients, "epochs": epochs,
              "batch_size": batch_size, "dataset": name}
    return recipe, inputs, X, y


def headline_metrics(result) -> None:
    head = result.headline
    columns = st.columns(4)
    columns[0].metric("Rounds", f"{head['rounds']:g}")
    if "noise_multiplier" in head:
        columns[1].metric("Noise multiplier σ", f"{head['noise_multiplier']:.4g}",
                          help=f"aggregated noise √T·σ = {head['aggregated_noise']:.4g}")
    elif "clients_per_round" in head:
        columns[1].metric("Clients per round", f"{head['clients_per_round']}")
    else:
        columns[1].metric("ε per upload", f"{head['per_upload_epsilon']:.4g}", help=f"{head['stages']} MAPA stages")
    if head["claimed_epsilon"] is None:
        columns[2].metric("ε, paper's claim", "none", help="the paper's theorem certifies nothing for this plan")
    else:
        columns[2].metric("ε, paper's claim", epsilon_text(head["claimed_epsilon"]),
                          help=f"at δ = {head['claimed_delta']:.3g}")
    columns[3].metric("ε, tight", epsilon_text(head["tight_epsilon"]), help=head["tight_accountant"])


def hypotheses_table(result) -> None:
    if not result.hypotheses:
        return
    frame = pd.DataFrame([{"check": "holds" if h.holds else "FAILS", "hypothesis": h.name,
                           "numbers": h.detail, "paper line": h.source} for h in result.hypotheses])
    if not result.hypotheses_hold:
        st.warning("A hypothesis of the paper's theorem fails for this plan: its claimed ε is not a guarantee.")
    st.dataframe(frame, hide_index=True)


def schedule_section(result) -> None:
    frame = pd.DataFrame(result.schedule.rows())
    if result.cumulative_epsilon is not None:
        frame["cumulative ε (RDP)"] = result.cumulative_epsilon
        chart = alt.Chart(frame).mark_line().encode(x="round", y=alt.Y("cumulative ε (RDP)"))
        st.altair_chart(chart.properties(height=220, title="ε spent after each round"), width="stretch")
    st.dataframe(frame, hide_index=True, height=240)
    columns = st.columns(3)
    for column, fmt in zip(columns, ("csv", "json", "yaml"), strict=True):
        extra = {"cumulative_epsilon": result.cumulative_epsilon} if fmt == "csv" else {}
        column.download_button(f"Download {fmt.upper()}", render(result.schedule, fmt, **extra),
                               file_name=f"fedplan_{result.recipe}.{fmt}")


def main() -> None:
    st.title("fedplan: plan a private federated run")
    st.caption("State your budget, data and compute; pick a recipe from the papers; get a schedule, the bound "
               "behind it and the tight accountant's ε for the very same schedule.")
    left, right = st.columns([1, 2])
    try:
        with left:
            recipe, inputs, X, y = request_inputs()
        with right, st.spinner("Planning…"):
            result = cached_plan(recipe, inputs, X, y)
        with right:
            headline_metrics(result)
            st.caption(result.statement)
            hypotheses_table(result)
            schedule_section(result)
            st.caption("Next: check a plan against its bound on the **Validate by simulation** page (sidebar).")
    except ValueError as error:
        st.error(str(error))


main()
