"""Plan with van Dijk et al.'s increasing sample sizes, next to a tight accountant.

The page builds the :class:`~fedplan.planner.tasks.vandijk.VandijkSelect` request of ``fedplan vandijk select``
from its widgets (:mod:`fedplan.app_pages.widgets`) and shows its report; the √T·σ-against-p chart is
:func:`fedplan.planner.vandijk.noise_against_growth_exponent` of the plan, at a K of its own. Inputs that give no
plan get a plain reason and, per control that can fix it, the nearest value that does as a one-click button
(:func:`fedplan.planner.vandijk.nearest_feasible`).
"""

from __future__ import annotations

import dataclasses

import pandas as pd
import streamlit as st

from fedplan.app_pages import background
from fedplan.app_pages.charts import show_chart
from fedplan.app_pages.markdown_elements import show_formula, show_table
from fedplan.app_pages.widgets import (
    Form,
    answer_in_background,
    as_text,
    box_name,
    changed_field,
    kept_answer,
    labelled,
    named_field,
    theorem_metric,
)
from fedplan.bounds import rdp
from fedplan.bounds.accounting import round_up
from fedplan.planner.display import accountant_label, epsilon_text, number_text
from fedplan.planner.export import render
from fedplan.planner.tasks.vandijk import MIN_GROWTH_EXPONENT, VandijkSelect
from fedplan.planner.vandijk import (
    SAMPLING_NOTE,
    VacuousClaimError,
    nearest_feasible,
    noise_against_growth_exponent,
    select_vandijk,
)

st.set_page_config(page_title="fedplan: increasing sample sizes", layout="wide")

TRANSITION_LABELS = {"p_minus": "p⁻ (K = K⁻)", "p_plus": "p⁺ (K = K⁺)"}
#: The request's fields as the page labels them, with the page's defaults (the main text's example, L211-219).
FIELDS = (
    ("initial_size", "Initial sample size s₀", "16"), ("client_size", "Records per client N_c", "10000"),
    ("grad_computations", "Gradient computations K", "25000"), ("noise_multiplier", "Noise multiplier σ", "8"),
    ("target_epsilon", "ε of the paper's claim", "1"), ("growth_exponent", "Growth exponent p", "1"),
    ("r0", "r0: r0(sigma), 1/e or a number", "1/e"),
)
LABELS = {name: label for name, label, _ in FIELDS}
#: The controls that can turn a refused plan into one, the way that helps (the m/T iteration settles with more
#: noise, less work or slower growth, L211-219) and the symbol a button shows.
REMEDIES = {"noise_multiplier": ("smallest", "σ"), "grad_computations": ("largest", "K"),
            "growth_exponent": ("largest", "p")}
#: Seconds the search for one control may take (its selections cost 2-20 ms, up to 0.6 s at K = 1e7).
SEARCH_SECONDS = 4.0
#: The last request that gave a plan: of the remedy controls, those changed since are searched (all if none); its
#: plan stays in view while a new one is computed.
LAST_PLANNED = "vandijk_last_planned"
#: The request of the session's first run: what a refusal compares with while no plan has come back yet (a box
#: changed before the first plan arrives is still the box just changed).
OPENED_WITH = "vandijk_opened_with"
NO_SCHEDULE = ("The paper's parameter selection (L211-219) finds no increasing schedule for these inputs: its limits "
               "on the sample rate keep the sizes from growing.")


def key(name: str) -> str:
    return f"vandijk_{name}"


def inputs_form() -> tuple[Form, VandijkSelect | None]:
    st.subheader("Inputs")
    form = Form(VandijkSelect)
    for name, label, default in FIELDS:
        form.field(name, label, default=default, key=key(name))
    form.field("variant", "Variant")
    with_pld = st.checkbox("Tight PLD as well as RDP (a few seconds)", value=False)
    return form, form.build(no_pld=not with_pld)


def search_end(request: VandijkSelect, name: str) -> float:
    """How far the search for ``name`` goes: σ up to the accountant's largest, K down to s₀, p down to 0.01."""
    return {"noise_multiplier": rdp.MAX_NOISE_MULTIPLIER, "grad_computations": float(request.initial_size),
            "growth_exponent": MIN_GROWTH_EXPONENT}[name]


def nearest_value(request: VandijkSelect, name: str) -> float | None:
    """The nearest value of control ``name`` with a plan (RDP only: the PLD box does not change the selection)."""
    integer = name == "grad_computations"

    def at(value: float) -> VandijkSelect:
        return dataclasses.replace(request, **{name: int(value) if integer else value}, no_pld=True)

    return nearest_feasible(lambda value: select_vandijk(**at(value).selection_arguments()),
                            lambda value: at(value).plan(), start=float(getattr(request, name)),
                            end=search_end(request, name), integer=integer, time_budget=SEARCH_SECONDS)


@st.cache_data(show_spinner=False, max_entries=64)
def nearest_offers(fields: tuple, groups: tuple[tuple[str, ...], ...], _request: VandijkSelect) -> tuple[dict, list]:
    """The nearest value with a plan of each control of the first group that has any (:func:`nearest_value`), and
    the controls searched (cached on the request's fields and the groups)."""
    offers, names = {}, []
    for group in groups:
        if offers:
            break
        names += group
        found = {name: nearest_value(_request, name) for name in group}
        offers = {name: value for name, value in found.items() if value is not None}
    return offers, names


def last_answered() -> VandijkSelect | None:
    """The request of the last plan, or before the first plan has come back the one the page opened with."""
    return st.session_state.get(LAST_PLANNED, st.session_state.get(OPENED_WITH))


def searched_controls(request: VandijkSelect) -> tuple[list[str], list[str]]:
    """The remedy controls changed since the last plan (the likely cause, searched first), and the others (searched
    only if the first find nothing)."""
    last = last_answered()
    changed = [name for name in REMEDIES if last is not None and getattr(last, name) != getattr(request, name)]
    return changed, [name for name in REMEDIES if name not in changed]


@st.cache_data(show_spinner=False, max_entries=64)
def plain_reason(fields: tuple, _request: VandijkSelect, _error: ValueError) -> str | None:
    """Why the inputs give no plan, in one plain sentence: a vacuous claim, or a selection that finds no schedule
    (the m/T iteration diverges); None for another refusal, which the request's own words then explain."""
    if isinstance(_error, VacuousClaimError):
        return _error.reason
    try:
        select_vandijk(**_request.selection_arguments())
    except ValueError:
        return NO_SCHEDULE
    return None


def refusal(form: Form, request: VandijkSelect, error: ValueError) -> None:
    """A plan the inputs do not give: the request's words under the widget of a field it names, else the reason in
    plain words (:func:`plain_reason`, or the request's words) under the box changed since the last plan, with its
    value and the nearest value that plans (else at the top of the form); here (the results' place) the nearest
    value of each control that gives a plan as a button, and the full message in an expander."""
    message, fields = str(error), tuple(request.inputs().items())
    field = named_field(message, list(form.slots))
    plain = None if field is not None else plain_reason(fields, request, error)
    st.subheader("No plan for these inputs")
    groups = tuple(tuple(group) for group in searched_controls(request))
    # in the script run, so that the refusal under the box names the nearest value at once (each search is cached)
    with st.spinner("Looking for the nearest inputs with a plan…"):
        offers, names = nearest_offers(fields, groups, request)
    last = last_answered()
    changed = changed_field(request.inputs(), None if last is None else last.inputs())
    if plain is not None and changed in form.slots:  # the box just changed, its value, and what to do
        value = getattr(request, changed)
        fix = "Change it back" + (f", or take {REMEDIES[changed][1]} = {number_text(offers[changed])}, the nearest "
                                  "value with a plan (one click, on the right)" if changed in offers else "") + "."
        plain = (f"{form.labels.get(changed, changed)} = {number_text(value) if isinstance(value, float) else value}"
                 f" gives no plan: {plain[0].lower()}{plain[1:]} {fix}")
    form.error(plain or message, field=field, otherwise=changed)
    if offers:
        st.markdown("Change one control to the nearest value that gives a plan with a claim that needs noise:")
        for column, (name, value) in zip(st.columns(len(offers)), offers.items(), strict=True):
            word, symbol = REMEDIES[name]
            column.button(f"{symbol} = {number_text(value)}", key=f"remedy_{name}",
                          on_click=st.session_state.__setitem__, args=(key(name), as_text(value)),
                          help=f"the {word} {LABELS[name]} whose plan claims a δ below one round's total variation "
                               f"(so ε > 0 at it); a value a little nearer may plan with a weaker claim")
    missing = [LABELS[name] for name in names if name not in offers]
    if missing:
        st.caption(f"No value of {', '.join(missing)} alone gives a plan (searched up to σ = 1e8, down to K = s₀ "
                   f"and p = 0.01, {SEARCH_SECONDS:g} s each); change ε, r0 or two controls at once.")
    if plain is not None:
        with st.expander("The planner's own message"):
            st.text(labelled(message, form.labels))


def sizes_chart(sizes) -> dict:
    """The Vega-Lite spec of s_i against i. A plain dict with a named data set (Streamlit sends it as Arrow): Altair
    and its schema validation took about 0.15 s a plan."""
    frame = pd.DataFrame({"Round i": range(len(sizes)), "Sample size s_i": list(sizes)})
    return {"title": "Sample size per round", "height": 240, "datasets": {"sizes": frame}, "data": {"name": "sizes"},
            "mark": {"type": "line"},
            "encoding": {"x": {"field": "Round i", "type": "quantitative", "title": "Round i"},
                         "y": {"field": "Sample size s_i", "type": "quantitative", "title": "Sample size s_i"}}}


@st.cache_data(show_spinner=False, max_entries=16)
def export_texts(fields: tuple, _plan) -> tuple[str, str]:
    """The schedule as CSV (one row per change of sample size, cumulative ε of its privacy block) and JSON (with
    the paper's claim, both accountants' ε and the hypotheses in its metadata). Written when a download is clicked:
    the privacy block runs the tight PLD accountant."""
    schedule = _plan.schedule()
    return render(schedule, "csv"), render(schedule, "json")


def results(request: VandijkSelect, answer) -> None:
    plan, summary = answer.result, answer.values
    st.write(plan.headline())
    first, second, third, fourth = st.columns(4)
    first.metric("Rounds", f"{summary['rounds']} / {summary['realised_rounds']}",
                 help="the rounds T the paper's selection reports / the rounds the schedule runs")
    second.metric("Constant-size rounds", number_text(summary["constant_rounds"]))
    theorem_metric(third, "Paper's δ at ε", f"{round_up(summary['delta'], 2):.2g}", summary["hypotheses"],
                   help=f"δ = {summary['delta']!r}, rounded up")
    tight = plan.tight_pld or plan.tight_rdp
    fourth.metric(f"ε ({accountant_label(tight.accountant, tight.bound)})", epsilon_text(tight.epsilon))
    st.caption(plan.rounds_note())
    claimed, label = plan.selection.epsilon, accountant_label(tight.accountant, tight.bound)
    if tight.epsilon < claimed:
        st.caption(f"The paper's bound claims ε = {number_text(claimed)} at its δ; the accountant ({label}) gives "
                   f"ε = {epsilon_text(tight.epsilon)} for the same schedule at the same δ: the paper's bound is "
                   f"about {number_text(claimed / tight.epsilon, 2)} times the accountant's.")
    else:
        st.warning(f"The accountant ({label}) gives ε = {epsilon_text(tight.epsilon)} at the paper's δ, not below the "
                   f"paper's claimed ε = {number_text(claimed)}: it does not confirm the paper's claim.")
    st.caption(f"Assumes {SAMPLING_NOTE}; add/remove-one neighbours; noise once per round.")
    if not summary["hypotheses_hold"]:
        st.warning("A hypothesis of the theorem fails for this plan (see the table).")
    show_table(pd.DataFrame(summary["hypotheses"]))
    matched = summary["matched_constant"]
    st.write(f"Same ε ({accountant_label(tight.accountant, tight.bound)}) with a constant size "
             f"{plan.selection.initial_size}: σ = {number_text(matched['constant_noise_multiplier'])}, aggregated "
             f"noise √T·σ = {number_text(matched['constant_aggregated_noise'])} against "
             f"{number_text(matched['increasing_aggregated_noise'])} for the increasing schedule.")
    fields = tuple(request.inputs().items())
    show_chart(sizes_chart(plan.selection.sizes))
    left, right = st.columns(2)
    left.download_button("Schedule CSV (a row per size, cumulative ε)", lambda: export_texts(fields, plan)[0],
                         file_name="vandijk_schedule.csv", mime="text/csv", on_click="ignore")
    right.download_button("Schedule JSON (with the claim and metadata)", lambda: export_texts(fields, plan)[1],
                          file_name="vandijk_schedule.json", mime="application/json", on_click="ignore")


def noise_against_p(plan, grad_computations: int) -> tuple[dict, dict]:
    """The transitions p⁻/p⁺ and the Vega-Lite spec of √T·σ against p (computed in the background: 0.1 s)."""
    rows, transitions = noise_against_growth_exponent(plan, grad_computations=grad_computations)
    frame = pd.DataFrame([{"p": row["p"], "case": row["case"], "√T·σ": row["aggregated_noise"]} for row in rows])
    return transitions, noise_chart(frame, transitions)


def noise_chart(frame: pd.DataFrame, transitions: dict) -> dict:
    """The points of √T·σ against p by Theorem 4's case, and a dashed grey rule at each transition. A plain dict
    with named data sets (Altair and its validation took about 0.1 s)."""
    layers = [{"data": {"name": "noise"}, "mark": {"type": "point", "size": 12, "filled": True},
               "encoding": {"x": {"field": "p", "type": "quantitative", "title": "Growth exponent p"},
                            "y": {"field": "√T·σ", "type": "quantitative", "title": "Aggregated noise √T·σ"},
                            "color": {"field": "case", "type": "nominal", "title": "Theorem 4 case"}}}]
    datasets = {"noise": frame.dropna()}
    marks = pd.DataFrame([{"p": p, "transition": name} for name in ("p_minus", "p_plus") for p in transitions[name]])
    if not marks.empty:
        layers.append({"data": {"name": "transitions"}, "mark": {"type": "rule", "strokeDash": [4, 4]},
                       "encoding": {"x": {"field": "p", "type": "quantitative"}, "color": {"value": "gray"},
                                    "tooltip": [{"field": "transition", "type": "nominal"},
                                                {"field": "p", "type": "quantitative"}]}})
        datasets["transitions"] = marks
    return {"height": 280, "datasets": datasets, "layer": layers,
            "title": {"text": ["Theorem 4: √T·σ against p", "no bound between K⁻ and K⁺; ×1.21 jump at p⁺"]}}


def transitions_section(request: VandijkSelect, answer) -> None:
    """The √T·σ-against-p curve of the plan at a K of its own box; without a plan (``answer`` None) the box stays,
    with a line saying the curve comes back with a plan."""
    st.subheader("√T·σ against p, with the K⁻/K⁺ transitions")
    if answer is None:
        Form(VandijkSelect).field("grad_computations", "Gradient computations K for this curve", default="100000")
        st.caption("The curve comes back when the inputs above give a plan.")
        return
    sel = answer.result.selection
    show_formula("K⁻ = B·ε^((1+p)/(1+2p))·(N_c/s)^(1/(1+2p))·N_c,  K⁺ = A·ε^((1+p)/(1+2p))·(N_c/s)^(1/(1+2p))·N_c",
                 "Theorem 4, vandijk L193; (27)/(28) L1271-1287")
    form = Form(VandijkSelect, labels={name: box_name(label) for name, label, _ in FIELDS})  # the plan's, named
    form.field("grad_computations", "Gradient computations K for this curve", default="100000")
    curve = form.vary(request)  # the same request at the curve's K: K is checked as the plan's is
    if curve is None:
        return
    try:
        found = background.answer(("vandijk-curve", tuple(request.inputs().items()), curve.grad_computations),
                                  lambda: noise_against_p(answer.result, curve.grad_computations),
                                  kind="vandijk_curve", label="√T·σ against p")
    except ValueError as error:
        st.info(f"No curve for this plan: {error}.")
        return
    if found is None:
        return
    transitions, spec = found
    found = ", ".join(f"{TRANSITION_LABELS[name]} = {p:.4f}"
                      for name in TRANSITION_LABELS for p in transitions[name]) or "none in (0, 2]"
    st.write(f"Transitions: {found} (m = {sel.m:.4g}, γ = {sel.gamma:.4g}, σ = {sel.sigma:g}).")
    show_chart(spec)


def main() -> None:
    st.title("Increasing sample sizes (van Dijk et al.)")
    show_formula("s_i,c = ⌈N_c·q·(i+m)^p⌉,  q_i = s_i,c/N_c", "Lemma 1, vandijk L177-201")
    left, right = st.columns([1, 2])
    with left:
        form, request = inputs_form()
    if request is None:
        return
    st.session_state.setdefault(OPENED_WITH, request)
    with right:
        computed = answer_in_background(form, request, "Selecting parameters and accounting the realised schedule",
                                        show_error=False)
    if computed.error is not None:
        with right:
            refusal(form, request, computed.error)
            st.fragment(transitions_section)(request, None)
        return
    answer, request = kept_answer(LAST_PLANNED, computed.report, request, pending=computed.pending, where=right)
    if answer is None:
        return
    with right:
        results(request, answer)
        st.fragment(transitions_section)(request, answer)  # its own K box reruns the curve alone


main()
