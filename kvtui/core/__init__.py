"""The shared vocabulary of every layer, importing nothing of kvtui: events, page states, store codes by name, the
page layout, units, defaults, knob specs and control messages."""
