"""Plan with van Dijk et al.'s increasing sample sizes, next to a tight accountant.

The page builds the :class:`~fedplan.planner.tasks.vandijk.VandijkSelect` request of ``fedplan vandijk select``
from its widgets (:mod:`fedplan.pages.widgets`) and shows its report; the √T·σ-against-p chart is
:func:`fedplan.planner.vandijk.noise_against_growth_exponent` of the plan, at a K of its own.
"""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from fedplan.bounds.accounting import round_up
from fedplan.pages.widgets import Form, form_page
from fedplan.planner.display import accountant_label, epsilon_text, theorem_label
from fedplan.planner.export import render
from fedplan.planner.tasks.vandijk import VandijkSelect
from fedplan.planner.vandijk import SAMPLING_NOTE, noise_against_growth_exponent

st.set_page_config(page_title="fedplan: increasing sample sizes", layout="wide")

TRANSITION_LABELS = {"p_minus": "p⁻ (K = K⁻)", "p_plus": "p⁺ (K = K⁺)"}
#: The request's fields as the page labels them, with the page's defaults (the main text's example, L211-219).
FIELDS = (
    ("initial_size", "Initial sample size s₀", "16"), ("client_size", "Records per client N_c", "10000"),
    ("grad_computations", "Gradient computations K", "25000"), ("noise_multiplier", "Noise multiplier σ", "8"),
    ("target_epsilon", "ε of the paper's claim", "1"), ("growth_exponent", "Growth exponent p", "1"),
    ("r0", "r0: r0(sigma), 1/e or a number", "1/e"),
)


def inputs_form() -> tuple[Form, VandijkSelect | None]:
    st.subheader("Inputs")
    form = Form(VandijkSelect)
    for name, label, default in FIELDS:
        form.field(name, label, default=default)
    form.field("variant", "Variant")
    with_pld = st.checkbox("Tight PLD as well as RDP (a few seconds)", value=False)
    return form, form.build(no_pld=not with_pld)


def sizes_chart(sizes) -> alt.Chart:
    frame = pd.DataFrame({"round": range(len(sizes)), "sample size": sizes})
    return alt.Chart(frame).mark_line().encode(x="round", y="sample size").properties(height=240)


def results(report) -> None:
    plan, summary = report.result, report.values
    st.write(plan.headline())
    first, second, third, fourth = st.columns(4)
    first.metric("Rounds (reported / run)", f"{summary['rounds']} / {summary['realised_rounds']}")
    second.metric("Constant-size rounds", f"{summary['constant_rounds']}")
    third.metric(theorem_label("Paper's δ at ε", summary["hypotheses"]), f"{round_up(summary['delta'], 2):.2g}",
                 help=f"δ = {summary['delta']!r}, rounded up")
    tight = plan.tight_pld or plan.tight_rdp
    fourth.metric(f"ε ({accountant_label(tight.accountant, tight.bound)}) at that δ", epsilon_text(tight.epsilon))
    st.caption(f"Assumes {SAMPLING_NOTE}; add/remove-one neighbours; noise once per round.")
    if not summary["hypotheses_hold"]:
        st.warning("A hypothesis of the theorem fails for this plan (see the table).")
    st.dataframe(pd.DataFrame(summary["hypotheses"]), hide_index=True)
    matched = summary["matched_constant"]
    st.write(f"Same tight ε with a constant size {plan.selection.initial_size}: σ = "
             f"{matched['constant_noise_multiplier']:.4g}, aggregated noise √T·σ = "
             f"{matched['constant_aggregated_noise']:.1f} against {matched['increasing_aggregated_noise']:.1f} for the "
             f"increasing schedule ({matched['accountant']}).")
    st.altair_chart(sizes_chart(list(plan.selection.sizes)), width="stretch")
    schedule = plan.schedule()
    left, right = st.columns(2)
    left.download_button("Schedule CSV (per round, cumulative ε)", render(
        schedule, "csv", cumulative_epsilon=plan.cumulative_epsilon()), file_name="vandijk_schedule.csv")
    right.download_button("Schedule JSON (with metadata)", render(schedule, "json"), file_name="vandijk_schedule.json")


@st.cache_data(show_spinner=False, max_entries=32)
def noise_against_p(fields: tuple, grad_computations: int, _plan) -> tuple[pd.DataFrame, dict]:
    rows, transitions = noise_against_growth_exponent(_plan, grad_computations=grad_computations)
    frame = pd.DataFrame([{"p": row["p"], "case": row["case"], "√T·σ": row["aggregated_noise"]} for row in rows])
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


def transitions_section(request: VandijkSelect, report) -> None:
    sel = report.result.selection
    st.subheader("√T·σ against p, with the K⁻/K⁺ transitions")
    st.latex(r"K^- = B\,\varepsilon^{\frac{1+p}{1+2p}}\Big(\frac{N_c}{s}\Big)^{\frac{1}{1+2p}}N_c,\quad "
             r"K^+ = A\,\varepsilon^{\frac{1+p}{1+2p}}\Big(\frac{N_c}{s}\Big)^{\frac{1}{1+2p}}N_c"
             r"\quad\text{(Theorem 4, vandijk L193; (27)/(28) L1271-1287)}")
    form = Form(VandijkSelect)
    form.field("grad_computations", "Gradient computations K for this curve", default="100000")
    curve = form.vary(request)  # the same request at the curve's K: K is checked as the plan's is
    if curve is None:
        return
    frame, transitions = noise_against_p(tuple(request.inputs().items()), curve.grad_computations, report.result)
    found = ", ".join(f"{TRANSITION_LABELS[name]} = {p:.4f}"
                      for name in TRANSITION_LABELS for p in transitions[name]) or "none in (0, 2]"
    st.write(f"Transitions: {found} (m = {sel.m:.4g}, γ = {sel.gamma:.4g}, σ = {sel.sigma:g}).")
    st.altair_chart(noise_chart(frame, transitions), width="stretch")


def main() -> None:
    st.title("Increasing sample sizes (van Dijk et al.)")
    st.latex(r"s_{i,c} = \lceil N_c\, q\, (i+m)^p \rceil,\qquad q_i = s_{i,c}/N_c"
             r"\quad\text{(Lemma 1, vandijk L177-201)}")
    report, right, request = form_page(inputs_form,
                                       spinner="Selecting parameters and accounting the realised schedule…")
    if report is None:
        return
    with right:
        results(report)
        transitions_section(request, report)


main()
