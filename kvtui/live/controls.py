"""What a control asks of a live session's workload, checked before anything changes: a knob's new value
(:mod:`kvtui.core.knobs` gives its range) and a page layout switch (:func:`plan_layout_switch`). Pure
functions: the session applies what they return, or logs the refusal they raise."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from kvtui.core.controls import SetKnob
from kvtui.core.knobs import WORKLOAD_KNOBS, Choice, Knob, check_knob
from kvtui.core.layout import PRESETS, PageLayout
from kvtui.core.text import plural
from workload import WorkloadSpec


def knob_change(control: SetKnob) -> tuple[str, object]:
    """``(workload knob, value)`` of a knob control, checked against its :mod:`kvtui.core.knobs` entry
    (:func:`~kvtui.core.knobs.check_knob`); ``ValueError`` (one line) when out of range or unknown."""
    return control.name, check_knob(control.name, control.value)


def change_text(knob: str, value: object) -> str:
    """The event-log line of a knob change (the UI shows its own request with the same text until then)."""
    spec = WORKLOAD_KNOBS.get(knob)
    if isinstance(spec, Knob) and isinstance(value, (int, float)):
        return spec.change_text(value)
    return spec.change_text(value) if isinstance(spec, Choice) else f"{knob} → {value}"


class LayoutRefused(ValueError):
    """A layout switch that cannot be made; the message is the event-log line's reason."""


@dataclass(frozen=True)
class LayoutSwitch:
    """A switch that may be made: to ``layout`` (preset ``name``), with ``changes`` for the workload's spec
    (``page_tokens``, ``prompt_tokens``)."""

    name: str
    layout: PageLayout
    changes: dict[str, Any]


def plan_layout_switch(name: str, current: PageLayout, spec: WorkloadSpec, *, prompt_pages: int | None,
                       page_bytes_used: dict[int, int], store_bytes: int | None,
                       pinned_by: str | None = None) -> LayoutSwitch | None:
    """Whether a synthetic workload of ``spec`` on pages of ``current`` may switch to layout preset ``name``
    (:data:`kvtui.core.layout.PRESETS`); None when it already runs it. ``prompt_pages``: prompts keep that many
    pages (None: their tokens stay as they are); ``page_bytes_used``: the page bytes of every tokens-per-page
    this session has used (the current layout's included); ``store_bytes``: the embedded segment (None:
    attached, unknown); ``pinned_by``: what needs the page size to stay (``--save-trace FILE``: a trace has one
    block size), None: nothing. ``LayoutRefused`` (one line) for an unknown name, another page size while
    ``pinned_by``, pages that would take the keys of
    stored pages of another size (keys hash tokens only), a prompt length out of range, or a prompt larger than
    the segment."""
    if name not in PRESETS:
        raise LayoutRefused(f"unknown layout {name!r} (choose from {', '.join(sorted(PRESETS))})")
    new = PRESETS[name]
    if new == current:
        return None
    if pinned_by and new.page_tokens != current.page_tokens:
        raise LayoutRefused(f"layout {name} has {new.page_tokens} tokens per page, but {pinned_by} writes blocks "
                            f"of {current.page_tokens}: a trace has one block size")
    if page_bytes_used.get(new.page_tokens, new.page_bytes) != new.page_bytes:
        which = "the current one" if new.page_tokens == current.page_tokens else "a layout used earlier"
        raise LayoutRefused(f"layout {name} has {new.page_tokens} tokens per page like {which} but other page "
                            "bytes: its pages would take the stored pages' keys")
    prompt_tokens = prompt_pages * new.page_tokens if prompt_pages else spec.prompt_tokens
    changes: dict[str, Any] = {"page_tokens": new.page_tokens, "prompt_tokens": prompt_tokens}
    try:
        replace(spec, **changes).validate()
    except ValueError as exc:
        raise LayoutRefused(f"layout {name}: {exc}") from None
    pages = prompt_tokens // new.page_tokens
    if store_bytes is not None and pages * new.page_bytes > store_bytes:
        raise LayoutRefused(f"one {name} prompt ({plural(pages, 'page')} of {new.page_bytes / 2**20:.1f} MiB) is "
                            f"larger than the store segment ({store_bytes / 2**20:.0f} MiB): every publish would fail")
    return LayoutSwitch(name, new, changes)
