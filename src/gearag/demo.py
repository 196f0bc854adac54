"""A small multi-hop corpus the project writes itself, for ``make demo``.

Twelve short encyclopedic passages around the GEAR paper's motivating
example (Table 1: Stephen Curry's father and his college team), with a few
distractors, and four 2–3-hop questions with gold passages and answers.
"""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console

from gearag.api import Gearag
from gearag.data import GoldMatcher, load_corpus, load_questions
from gearag.display import print_result, safe
from gearag.errors import OutputError
from gearag.evaluation import evaluate_run
from gearag.indexing import build_index
from gearag.methods import method_config
from gearag.outputs import check_output_dir, write_text_atomic

PASSAGES = [
    ("Stephen Curry", "Wardell Stephen Curry II (born March 14, 1988) is an American professional basketball player "
     "and point guard for the Golden State Warriors of the NBA. He was born in Akron, Ohio, and is the son of former "
     "NBA player Dell Curry. Curry played college basketball for the Davidson Wildcats."),
    ("Dell Curry", "Wardell Stephen \"Dell\" Curry (born June 25, 1964) is an American former professional basketball "
     "player. He started his college basketball career with the Virginia Tech Hokies. He was drafted by the Utah Jazz "
     "in 1986 and spent ten seasons with the Charlotte Hornets."),
    ("Virginia Tech Hokies men's basketball", "The Virginia Tech Hokies men's basketball team represents Virginia "
     "Polytechnic Institute and State University in Blacksburg, Virginia. Dell Curry joined the Hokies in 1982 and "
     "left as the school's all-time leading scorer."),
    ("Davidson Wildcats men's basketball", "The Davidson Wildcats men's basketball team represents Davidson College in "
     "North Carolina. Coached by Bob McKillop, the Wildcats reached the Elite Eight of the 2008 NCAA tournament."),
    ("Seth Curry", "Seth Adham Curry (born August 23, 1990) is an American professional basketball player. He is the "
     "younger brother of Stephen Curry. He played college basketball for the Duke Blue Devils."),
    ("Duke Blue Devils men's basketball", "The Duke Blue Devils men's basketball team represents Duke University in "
     "Durham, North Carolina. Mike Krzyzewski coached the Blue Devils from 1980 to 2022."),
    ("Akron, Ohio", "Akron is a city in Summit County, Ohio, United States. It lies on the Little Cuyahoga River about "
     "39 miles south of Cleveland."),
    ("Golden State Warriors", "The Golden State Warriors are an American professional basketball team based in San "
     "Francisco. The Warriors won NBA championships in 2015, 2017, 2018 and 2022."),
    ("Utah Jazz", "The Utah Jazz are an American professional basketball team based in Salt Lake City. The franchise "
     "began in 1974 in New Orleans."),
    ("Charlotte Hornets", "The Charlotte Hornets are an American professional basketball team based in Charlotte, "
     "North Carolina. The team began play in 1988 as an expansion franchise."),
    ("Stephen Curry (comedian)", "Stephen Curry (born 1976) is an Australian comedian and actor, known for the film "
     "The Castle."),
    ("Sonya Curry", "Sonya Curry (born 1966) is the mother of Stephen Curry and Seth Curry. She played volleyball at "
     "Virginia Tech."),
]

QUESTIONS = [
    {"id": "curry-father-college", "answer": "1982",
     "question": "In what year did Stephen Curry's father join the team from which he started his college basketball "
                 "career?",
     "gold": ["Stephen Curry", "Dell Curry", "Virginia Tech Hokies men's basketball"]},
    {"id": "curry-brother-coach", "answer": "Mike Krzyzewski",
     "question": "Who coached the college basketball team of Stephen Curry's younger brother?",
     "gold": ["Seth Curry", "Duke Blue Devils men's basketball"]},
    {"id": "curry-birthplace-county", "answer": "Summit County",
     "question": "In which county is the city where Stephen Curry was born?",
     "gold": ["Stephen Curry", "Akron, Ohio"]},
    {"id": "curry-father-draft", "answer": "Salt Lake City",
     "question": "In which city is the team that drafted Stephen Curry's father based?",
     "gold": ["Stephen Curry", "Dell Curry", "Utah Jazz"]},
]


#: The file that marks a directory as written by the demo (so a rerun may replace its files).
MARKER = ".gearag-demo"


def claim_demo_dir(directory: Path) -> None:
    """Make ``directory`` the demo's: new, empty, or written by an earlier demo; otherwise an OutputError.

    The demo never writes into a directory of the user's own: it would
    replace their ``corpus.jsonl``, ``questions.jsonl`` or ``index``.
    """
    check_output_dir(directory, what="--dir")
    if directory.exists() and any(directory.iterdir()) and not (directory / MARKER).is_file():
        raise OutputError(
            f"--dir {directory}: exists, is not empty and was not written by `gearag demo`; "
            "choose a new or empty directory"
        )
    directory.mkdir(parents=True, exist_ok=True)
    (directory / MARKER).write_text("written by `gearag demo`; safe to delete with this directory\n",
                                    encoding="utf-8")


def write_demo_data(directory: Path) -> tuple[Path, Path]:
    """Write ``corpus.jsonl`` and ``questions.jsonl`` into ``directory`` (claimed first, see :func:`claim_demo_dir`)."""
    claim_demo_dir(directory)
    corpus = directory / "corpus.jsonl"
    questions = directory / "questions.jsonl"
    write_text_atomic(
        corpus, "".join(json.dumps({"id": f"d{i}", "title": t, "text": x}) + "\n" for i, (t, x) in enumerate(PASSAGES))
    )
    write_text_atomic(questions, "".join(json.dumps(q) + "\n" for q in QUESTIONS))
    return corpus, questions


def run_demo(directory: Path, method: str = "gear", console: Console | None = None, top_k: int = 5) -> dict:
    """Write the demo data, index it, run ``method`` on each question and report recall."""
    console = console or Console()
    method_config(method)  # an unknown method fails before anything is written
    corpus_path, questions_path = write_demo_data(Path(directory))
    passages = load_corpus(corpus_path)
    questions = load_questions(questions_path)
    index = build_index(passages, Path(directory) / "index", overwrite=True)
    counts = index.manifest["counts"]
    console.print(
        f"[bold]demo index:[/] {counts['passages']} passages, {counts['triples']} triples, "
        f"{counts['entities']} entities in {safe(Path(directory) / 'index')}\n"
    )
    matcher = GoldMatcher(passages)
    app = Gearag(index)
    rows = []
    for q in questions:
        result = app.retrieve(q.question, method, top_k)
        gold_rows = set().union(*matcher.resolve(q))
        print_result(console, index, q.question, result, gold_rows)
        if q.answer:
            console.print(f"[dim]expected answer: {safe(q.answer)}[/]\n")
        rows.append(app.row(result, qid=q.id))
    report = evaluate_run(questions, rows, ks=(2, 5))
    cells = "  ".join(f"{k} {v}" for k, v in report.row().items())
    console.print(f"[bold]{safe(method)}[/] on the demo questions: {cells}")
    return report.to_dict()
