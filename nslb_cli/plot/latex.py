"""Tables as LaTeX for a paper: a booktabs ``tabular`` of the cells the Markdown table shows
(the same text, so the same digits), with chosen cells in bold; ``\\input`` it inside a
``table`` environment (the preamble needs ``\\usepackage{booktabs}``).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence

SPECIAL = {  # LaTeX's special characters, and the non-ASCII ones nslb's tables use
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
    "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
    "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}",
    "±": r"$\pm$", "Δ": r"$\Delta$", "–": "--", "−": "$-$", "ε": r"$\varepsilon$",
    "≥": r"$\geq$", "≤": r"$\leq$", "×": r"$\times$", "μ": r"$\mu$", "σ": r"$\sigma$",
    "γ": r"$\gamma$", "τ": r"$\tau$", "α": r"$\alpha$", "β": r"$\beta$", "·": r"$\cdot$",
}  # fmt: skip


MINUS = re.compile(r"(?<![\w.])-(?=\d)")  # a minus sign (``-2.4``, ``[-3, -1]``), not a hyphen


def escape(text: str) -> str:
    """``text`` as LaTeX prints it: specials escaped, the tables' symbols and minus signs in
    math mode (a hyphen as in ``CD-UCB`` stays one)."""
    return "".join(
        "$-$" if MINUS.match(text, i) else SPECIAL.get(character, character)
        for i, character in enumerate(text)
    )


def tabular(
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    align: str = "",
    bold: Collection[tuple[int, int]] = (),
) -> str:
    """A booktabs ``tabular``: ``header``, then ``rows`` of cells (text as in Markdown);
    ``align``: one ``l`` or ``r`` per column (default: the first left, the others right);
    ``bold``: the ``(row, column)`` cells set in bold, their math too (each column's best)."""
    align = align or "l" + "r" * (len(header) - 1)
    lines = [
        f"\\begin{{tabular}}{{{align}}}",
        r"\toprule",
        " & ".join(escape(cell) for cell in header) + r" \\",
        r"\midrule",
    ]
    for i, row in enumerate(rows):
        cells = [
            f"\\textbf{{\\boldmath{{}}{escape(cell)}}}" if (i, j) in bold and cell else escape(cell)
            for j, cell in enumerate(row)
        ]
        lines.append(" & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines) + "\n"
