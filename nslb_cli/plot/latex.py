"""Tables as LaTeX for a paper: a booktabs ``tabular`` of the cells the Markdown table shows
(the same text, so the same digits), with chosen cells in bold; ``\\input`` it inside a
``table`` environment (the preamble needs ``\\usepackage{booktabs}``).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

SPECIAL = {  # LaTeX's special characters, and the non-ASCII ones nslb's tables use
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
    "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
    "±": r"$\pm$", "Δ": r"$\Delta$", "–": "--", "−": "$-$", "ε": r"$\varepsilon$",
    "≥": r"$\geq$", "≤": r"$\leq$", "×": r"$\times$", "μ": r"$\mu$", "σ": r"$\sigma$",
    "γ": r"$\gamma$", "τ": r"$\tau$", "α": r"$\alpha$", "β": r"$\beta$", "·": r"$\cdot$",
}  # fmt: skip


def escape(text: str) -> str:
    """``text`` as LaTeX prints it: specials escaped, the tables' symbols in math mode."""
    return "".join(SPECIAL.get(character, character) for character in text)


def tabular(
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    align: str = "",
    bold: Collection[tuple[int, int]] = (),
) -> str:
    """A booktabs ``tabular``: ``header``, then ``rows`` of cells (text as in Markdown);
    ``align``: one ``l`` or ``r`` per column (default: the first left, the others right);
    ``bold``: the ``(row, column)`` cells set in bold (e.g. each column's best value)."""
    align = align or "l" + "r" * (len(header) - 1)
    lines = [
        f"\\begin{{tabular}}{{{align}}}",
        r"\toprule",
        " & ".join(escape(cell) for cell in header) + r" \\",
        r"\midrule",
    ]
    for i, row in enumerate(rows):
        cells = [
            f"\\textbf{{{escape(cell)}}}" if (i, j) in bold and cell else escape(cell)
            for j, cell in enumerate(row)
        ]
        lines.append(" & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines) + "\n"
