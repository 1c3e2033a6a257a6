"""The Grafana dashboard drawn without Grafana: every panel's PromQL read from a Prometheus server over a window
(``/api/v1/query_range``) and drawn with matplotlib in the dashboard's grid order, row panels as section titles, one
line per returned series. A query that fails or returns nothing draws its panel with "no data" (never a made-up
series) and is named in the summary.

    render(prometheus_url, out, window, ...) -> Summary       the PNG and what each panel showed
    substitute(expr, variables) / layout(dashboard) / legend(format, labels) / parse_duration(text)   pure parts
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import json
import math
import re
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Callable
from urllib.parse import urlencode

from .config import REPO_ROOT
from .errors import AsyncTriggersError, ConfigError

DASHBOARD = REPO_ROOT / "trigger-plugin" / "dist" / "metrics" / "grafana-dashboard.json"
GRID_COLUMNS = 24        # Grafana's grid is 24 columns wide
LEGEND_LABELS = ("pool", "flow", "instance", "quantile")
UNITS = {"short": "", "none": "", "ms": "ms", "s": "s", "ops": "ops/s", "reqps": "req/s", "bytes": "bytes",
         "percent": "%", "percentunit": "ratio"}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "": 1}


class QueryFailed(AsyncTriggersError):
    """Prometheus could not be reached or refused a query."""


@dataclasses.dataclass(frozen=True)
class Window:
    start: float    # epoch seconds
    end: float
    step: float     # seconds between points

    @classmethod
    def ending(cls, end: float, since: float, points: int = 300) -> "Window":
        """The ``since`` seconds up to ``end``, about ``points`` points (a step of 1 s at least)."""
        return cls(end - since, end, max(1.0, round(since / points)))


@dataclasses.dataclass(frozen=True)
class Placement:
    panel: dict
    x: int      # grid columns, 0..23
    y: int      # grid units from the top, rows included
    w: int
    h: int

    @property
    def is_row(self) -> bool:
        return self.panel.get("type") == "row"


@dataclasses.dataclass
class PanelResult:
    title: str
    series: list = dataclasses.field(default_factory=list)    # (legend, [epoch seconds], [values])
    errors: list = dataclasses.field(default_factory=list)

    @property
    def has_data(self) -> bool:
        return bool(self.series)


@dataclasses.dataclass
class Summary:
    out: Path
    prometheus: str
    window: Window
    panels: list

    @property
    def no_data(self) -> list[str]:
        return [p.title for p in self.panels if not p.has_data]

    def as_dict(self) -> dict:
        return {"out": str(self.out), "prometheus": self.prometheus, "window": dataclasses.asdict(self.window),
                "panels": [{"title": p.title, "series": len(p.series), "data": p.has_data, "errors": p.errors}
                           for p in self.panels], "no_data": self.no_data}


def parse_duration(text: str) -> float:
    """Seconds of '90s', '10m', '1.5h', '2d' or a plain number of seconds."""
    match = _DURATION.match(str(text))
    if not match or float(match.group(1)) <= 0:
        raise ConfigError(f"invalid duration '{text}' (e.g. 90s, 10m, 1h)")
    return float(match.group(1)) * _SECONDS[match.group(2)]


def substitute(expr: str, variables: dict[str, str]) -> str:
    """The dashboard variables ($name and ${name}) of a query replaced by their values; others left as they are."""
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: variables.get(m.group(1) or m.group(2), m.group(0)), expr)


def variables(flow: str = ".*", node: str = ".*", rate_interval: str = "1m") -> dict[str, str]:
    return {"flow": flow, "node": node, "__rate_interval": rate_interval}


def legend(fmt: str | None, labels: dict[str, str]) -> str:
    """A series' name: the target's legendFormat with {{label}} filled in, else its flow, instance, quantile..."""
    if fmt:
        return re.sub(r"\{\{\s*(\w+)\s*\}\}", lambda m: labels.get(m.group(1), ""), fmt).strip()
    shown = [f"{k}={labels[k]}" for k in LEGEND_LABELS if k in labels]
    return " ".join(shown) or labels.get("__name__", "") or "{}"


def layout(dashboard: dict) -> list[Placement]:
    """Every panel in the dashboard's grid order: sections (a row and the panels under it, a collapsed row's own
    panels too) stacked from the top, each panel keeping its x, width, height and place within its section."""
    sections: list[tuple[dict | None, list[dict]]] = [(None, [])]
    for panel in sorted(dashboard.get("panels", []), key=_position):
        if panel.get("type") == "row":
            sections.append((panel, list(panel.get("panels", []))))
        else:
            sections[-1][1].append(panel)
    placed, cursor = [], 0
    for row, members in sections:
        if row is not None:
            placed.append(Placement(row, 0, cursor, GRID_COLUMNS, 1))
            cursor += 1
        if members:
            top, start = min(_position(p)[0] for p in members), cursor
            for panel in sorted(members, key=_position):
                (y, x), g = _position(panel), panel.get("gridPos", {})
                placed.append(Placement(panel, x, start + y - top, g.get("w", 12), g.get("h", 8)))
                cursor = max(cursor, placed[-1].y + placed[-1].h)
    return placed


def _position(panel: dict) -> tuple[int, int]:
    g = panel.get("gridPos", {})
    return g.get("y", 0), g.get("x", 0)


def query_range(prometheus: str, expr: str, window: Window, timeout: float = 15.0) -> list[dict]:
    """The series a range query returns (each {"metric": labels, "values": [[t, "v"], ...]}); QueryFailed."""
    url = f"{prometheus.rstrip('/')}/api/v1/query_range?" + urlencode(
        {"query": expr, "start": f"{window.start:.3f}", "end": f"{window.end:.3f}", "step": f"{window.step:g}"})
    try:
        with urllib.request.urlopen(url, timeout=timeout) as answer:
            body = json.loads(answer.read())
    except urllib.error.HTTPError as e:    # Prometheus answers a bad query with 400 and a JSON error
        try:
            body = json.loads(e.read())
        except ValueError:
            raise QueryFailed(f"{prometheus} answered HTTP {e.code}") from e
    except (OSError, ValueError) as e:
        raise QueryFailed(f"cannot query {prometheus}: {getattr(e, 'reason', e)}") from e
    if body.get("status") != "success":
        raise QueryFailed(f"{body.get('errorType', 'error')}: {body.get('error', body)}")
    return body.get("data", {}).get("result", [])


Query = Callable[[str, str, Window], list]


def collect(dashboard: dict, prometheus: str, window: Window, values: dict[str, str],
            query: Query = query_range) -> list[tuple[Placement, PanelResult | None]]:
    """Each placement with its panel's series (None for a row); a failed query is recorded, never raised."""
    out = []
    for place in layout(dashboard):
        if place.is_row or not place.panel.get("targets"):
            out.append((place, None))
            continue
        result = PanelResult(place.panel.get("title", ""))
        for target in place.panel["targets"]:
            if target.get("hide") or not target.get("expr"):
                continue
            expr = substitute(target["expr"], values)
            try:
                found = query(prometheus, expr, window)
            except QueryFailed as e:
                result.errors.append(f"{expr}: {e}")
                continue
            for s in found:
                points = [(float(t), float(v)) for t, v in s.get("values", [])]
                if points:
                    result.series.append((legend(target.get("legendFormat"), s.get("metric", {})),
                                          [t for t, _ in points], [v for _, v in points]))
            if not found:
                result.errors.append(f"{expr}: no series")
        out.append((place, result))
    return out


def _pyplot():
    try:
        import matplotlib
    except ImportError as e:
        raise AsyncTriggersError("matplotlib is missing: install the bench extra "
                                 "(pip install -e '.[bench]'; `make venv` does)") from e
    matplotlib.use("Agg")
    import matplotlib.dates as mdates
    import matplotlib.pyplot as plt
    return plt, mdates


def draw(panels: list[tuple[Placement, PanelResult | None]], out: Path, title: str, window: Window) -> Path:
    plt, mdates = _pyplot()
    height = max((p.y + p.h for p, _ in panels), default=1)
    width_in, unit_in, top_in = 16.0, 0.34, 0.5
    fig_h = height * unit_in + top_in
    fig = plt.figure(figsize=(width_in, fig_h))
    fig.suptitle(f"{title}   {_when(window.start):%Y-%m-%d %H:%M:%S} - {_when(window.end):%H:%M:%S}", fontsize=13,
                 y=1 - 0.15 / fig_h)
    fmt = "%H:%M:%S" if window.end - window.start < 600 else "%H:%M"
    for place, result in panels:
        left, bottom = place.x / GRID_COLUMNS * width_in, fig_h - top_in - (place.y + place.h) * unit_in
        pad = (0.6, 0.3, 0.15, 0.35) if result is not None else (0.1, 0, 0, 0)   # left, bottom, right, top (in)
        ax = fig.add_axes(((left + pad[0]) / width_in, (bottom + pad[1]) / fig_h,
                           (place.w / GRID_COLUMNS * width_in - pad[0] - pad[2]) / width_in,
                           (place.h * unit_in - pad[1] - pad[3]) / fig_h))
        if result is None:
            ax.axis("off")
            ax.text(0, 0.3, place.panel.get("title", ""), fontsize=12, fontweight="bold", va="center")
            continue
        unit = UNITS.get(place.panel.get("fieldConfig", {}).get("defaults", {}).get("unit", ""), "")
        ax.set_title(place.panel.get("title", ""), fontsize=10, loc="left")
        ax.set_xlim(_when(window.start), _when(window.end))
        ax.xaxis.set_major_formatter(mdates.DateFormatter(fmt))
        ax.tick_params(labelsize=7)
        ax.set_ylabel(unit, fontsize=8)
        if not result.has_data:
            ax.set_yticks([])
            ax.text(0.5, 0.5, "no data", transform=ax.transAxes, ha="center", va="center", fontsize=12,
                    color="grey")
            continue
        for name, ts, vs in result.series:
            ax.plot([_when(t) for t in ts], [v if math.isfinite(v) else math.nan for v in vs], linewidth=1.2,
                    label=name)
        ax.set_ylim(bottom=min(0, ax.get_ylim()[0]))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6, loc="upper left", ncol=2 if len(result.series) > 4 else 1, framealpha=0.6)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out


def _when(epoch: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(epoch)


def load_dashboard(path: Path = DASHBOARD) -> dict:
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise ConfigError(f"cannot read the dashboard {path}: {e}") from e


def render(prometheus: str, out: Path, window: Window | None = None, dashboard: Path = DASHBOARD,
           flow: str = ".*", node: str = ".*", rate_interval: str = "1m", query: Query = query_range) -> Summary:
    """Draw ``dashboard``'s panels from ``prometheus`` over ``window`` (default: the last 10 minutes) into ``out``."""
    if not re.fullmatch(r"\d+(ms|s|m|h|d)", rate_interval):
        raise ConfigError(f"invalid rate interval '{rate_interval}': a PromQL duration (e.g. 30s, 1m)")
    window = window or Window.ending(time.time(), 600)
    board = load_dashboard(dashboard)
    panels = collect(board, prometheus, window, variables(flow, node, rate_interval), query)
    draw(panels, out, board.get("title", "dashboard"), window)
    return Summary(Path(out), prometheus, window, [r for _, r in panels if r is not None])
