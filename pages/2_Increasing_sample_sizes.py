"""Plan with van Dijk et al.'s increasing sample sizes, next to a tight accountant (thin over planner.vandijk)."""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd
import streamlit as st

from fedplan.bounds import vandijk
from fedplan.bounds.accounting import round_up
from fedplan.planner.display import epsilon_text, parse_number
from fedplan.planner.export import render
from fedplan.planner.vandijk import SAMPLING_NOTE, parse_r0, plan_vandijk

st.set_page_config(page_title="fedplan: increasing sample sizes", layout="wide")

TRANSITION_LABELS = {"p_minus": "p⁻ (K = K⁻)", "p_plus": "p⁺ (K = K⁺)"}


@st.cache_data(show_spinner=False, max_entries=64)
def cached_plan(inputs: tuple, with_pld: bool):
    return plan_vandijk(**dict(inputs), with_pld=with_pld, time_budget=10.0)


def inputs_form() -> tuple[tuple, bool]:
    st.subheader("Inputs")
    values = {
        "initial_size": parse_number("initial_size", st.text_input("Initial sample size s₀", "16")),
        "client_size": parse_number("client_size", st.text_input("Records per client N_c", "10000")),
        "grad_computations": parse_number("grad_computations", st.text_input("Gradient computations K", "25000")),
        "sigma": parse_number("sigma", st.text_input("Noise multiplier σ", "8")),
        "epsilon": parse_number("epsilon", st.text_input("ε of the paper's claim", "1")),
        "p": parse_number("p", st.text_input("Growth exponent p", "1")),
        "r0": parse_r0(st.text_input("r0: r0(sigma), 1/e or a number", "1/e")),
        "variant": st.radio("Variant", ["corrected", "paper"], horizontal=True),
    }
    for name in ("initial_size", "client_size"):
        if float(values[name]).is_integer():
            values[name] = int(values[name])
    with_pld = st.checkbox("Tight PLD as well as RDP (a few seconds)", value=False)
    return tuple(values.items()), with_pld


def sizes_chart(sizes) -> alt.Chart:
    frame = pd.DataFrame({"round": range(len(sizes)), "sample size": sizes})
    return alt.Chart(frame).mark_line().encode(x="round", y="sample size").properties(height=240)


def results(plan) -> None:
    sel, summary = plan.selection, plan.summary()
    st.write(plan.headline())
    first, second, third, fourth = st.columns(4)
    first.metric("Rounds (reported / run)", f"{sel.rounds} / {plan.realised_rounds}")
    second.metric("Constant-size rounds", f"{sel.constant_rounds}")
    third.metric("Paper's δ at ε", f"{round_up(sel.delta, 2):.2g}", help=f"δ = {sel.delta!r}, rounded up")
    tight = plan.tight_pld or plan.tight_rdp
    fourth.metric(f"Tight ε ({tight.accountant.upper()}) at that δ", epsilon_text(tight.epsilon))
    st.caption(f"Assumes {SAMPLING_NOTE}; add/remove-one neighbours; noise once per round.")
    table = pd.DataFrame(summary["hypotheses"])
    if not summary["hypotheses_hold"]:
        st.warning("A hypothesis of the theorem fails for this plan (see the table).")
    st.dataframe(table, hide_index=True)
    matched = summary["matched_constant"]
    st.write(f"Same tight ε with a constant size {sel.initial_size}: σ = {matched['constant_noise_multiplier']:.4g}, "
             f"aggregated noise √T·σ = {matched['constant_aggregated_noise']:.1f} against "
             f"{matched['increasing_aggregated_noise']:.1f} for the increasing schedule ({matched['accountant']}).")
    st.altair_chart(sizes_chart(list(sel.sizes)), width="stretch")
    schedule = plan.schedule()
    left, right = st.columns(2)
    left.download_button("Schedule CSV (per round, cumulative ε)", render(
        schedule, "csv", cumulative_epsilon=plan.cumulative_epsilon()), file_name="vandijk_schedule.csv")
    right.download_button("Schedule JSON (with metadata)", render(schedule, "json"), file_name="vandijk_schedule.json")


@st.cache_data(show_spinner=False, max_entries=32)
def noise_against_p(setting: tuple, delta: float) -> tuple[pd.DataFrame, dict]:
    """√T·σ_min of Theorem 4 on a grid of p in [0.01, 2], and p⁻/p⁺ where K crosses K⁻ and K⁺."""
    values = dict(setting)
    transitions = vandijk.transition_exponents(p_max=2.0, **values)
    exponents = np.union1d(np.linspace(0.01, 2.0, 240), [p * (1 + 1e-9) for p in transitions["p_plus"]])
    curve = vandijk.aggregated_noise_curve(exponents=exponents, delta=delta, **values)
    frame = pd.DataFrame([{"p": point.p, "case": point.theorem.case, "√T·σ": point.aggregated_noise}
                          for point in curve])
    return frame, transitions


def noise_chart(frame: pd.DataFrame, transitions: dict) -> alt.Chart:
    line = alt.Chart(frame.dropna()).mark_point(size=12, filled=True).encode(x="p", y="√T·σ", color="case")
    marks = pd.DataFrame([{"p": p, "transition": name} for name in ("p_minus", "p_plus") for p in transitions[name]])
    layers = line
    if not marks.empty:
        layers += alt.Chart(marks).mark_rule(strokeDash=[4, 4]).encode(x="p", color=alt.value("gray"),
                                                                        tooltip=["transition", "p"])
    return layers.properties(height=280, title="Theorem 4: aggregated noise √T·σ against the growth exponent p "
                                               "(no bound between K⁻ and K⁺; ×1.21 jump at p⁺)")


def transitions_section(plan) -> None:
    sel = plan.selection
    st.subheader("√T·σ against p, with the K⁻/K⁺ transitions")
    st.latex(r"K^- = B\,\varepsilon^{\frac{1+p}{1+2p}}\Big(\frac{N_c}{s}\Big)^{\frac{1}{1+2p}}N_c,\quad "
             r"K^+ = A\,\varepsilon^{\frac{1+p}{1+2p}}\Big(\frac{N_c}{s}\Big)^{\frac{1}{1+2p}}N_c"
             r"\quad\text{(Theorem 4, vandijk L193; (27)/(28) L1271-1287)}")
    k = parse_number("grad_computations", st.text_input("Gradient computations K for this curve", "100000"))
    setting = (("initial_size", sel.initial_size), ("offset", sel.m), ("client_size", sel.client_size),
               ("epsilon", sel.epsilon), ("sigma", sel.sigma), ("grad_computations", k), ("gamma", sel.gamma))
    frame, transitions = noise_against_p(setting, sel.delta)
    found = ", ".join(f"{TRANSITION_LABELS[name]} = {p:.4f}"
                      for name in TRANSITION_LABELS for p in transitions[name]) or "none in (0, 2]"
    st.write(f"Transitions: {found} (m = {sel.m:.4g}, γ = {sel.gamma:.4g}, σ = {sel.sigma:g}).")
    st.altair_chart(noise_chart(frame, transitions), width="stretch")


def main() -> None:
    st.title("Increasing sample sizes (van Dijk et al.)")
    st.latex(r"s_{i,c} = \lceil N_c\, q\, (i+m)^p \rceil,\qquad q_i = s_{i,c}/N_c"
             r"\quad\text{(Lemma 1, vandijk L177-201)}")
    left, right = st.columns([1, 2])
    try:
        with left:
            inputs, with_pld = inputs_form()
        with right, st.spinner("Selecting parameters and accounting the realised schedule…"):
            plan = cached_plan(inputs, with_pld)
        with right:
            results(plan)
            transitions_section(plan)
    except ValueError as error:
        st.error(str(error))


main()
