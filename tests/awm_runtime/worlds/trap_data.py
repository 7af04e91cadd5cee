"""A dataset of hostile and broken scenarios for containment tests: hangs, crashes, bad imports, bad rows."""

from __future__ import annotations

import json
from pathlib import Path

from awm_runtime.worlds._pack import merge_rows, scenario_rows, write_dataset

TRAP_APP = '''
import os, sys, time
from fastapi import FastAPI, Query
from pydantic import BaseModel
from sqlalchemy import Column, ForeignKey, Integer, String, create_engine
from sqlalchemy.orm import declarative_base, sessionmaker

engine = create_engine(os.getenv("DATABASE_PATH", "sqlite:///trap.db"), connect_args={"check_same_thread": False})
SessionLocal = sessionmaker(bind=engine)
Base = declarative_base()
app = FastAPI(title="Trap")


class Item(Base):
    __tablename__ = "items"
    id = Column(Integer, primary_key=True)
    name = Column(String, nullable=False)


class Tag(Base):
    __tablename__ = "tags"
    id = Column(Integer, primary_key=True)
    item_id = Column(Integer, ForeignKey("items.id"), nullable=False)


class Count(BaseModel):
    count: int


@app.get("/items/count", operation_id="count_items", summary="Count items", response_model=Count)
async def count_items():
    s = SessionLocal()
    n = s.query(Item).count()
    s.close()
    return Count(count=n)


@app.post("/items", operation_id="add_item", summary="Add an item", response_model=Count)
async def add_item(name: str = Query(...)):
    s = SessionLocal()
    s.add(Item(name=name))
    s.commit()
    n = s.query(Item).count()
    s.close()
    return Count(count=n)


@app.post("/tags", operation_id="add_tag", summary="Tag an item", response_model=Count)
async def add_tag(item_id: int = Query(...)):
    with SessionLocal() as s, s.begin():
        s.add(Tag(item_id=item_id))
    return Count(count=1)


@app.post("/half", operation_id="half_write", summary="Writes, then fails with the session open")
async def half_write():
    s = SessionLocal()
    s.add(Item(name="half"))
    s.flush()
    raise RuntimeError("boom")


@app.get("/hang", operation_id="hang", summary="Never returns")
async def hang():
    time.sleep(3600)


@app.get("/slow", operation_id="slow", summary="Answers after a while, naming the caller's tag")
async def slow(seconds: float = Query(...), tag: str = Query(...)):
    time.sleep(seconds)
    return {"tag": tag}


@app.get("/echo", operation_id="echo", summary="Names the caller's tag")
async def echo(tag: str = Query(...)):
    return {"tag": tag}


@app.get("/shout", operation_id="shout", summary="Writes one very long line to stderr")
async def shout():
    sys.stderr.write("x" * (1 << 20))
    sys.stderr.flush()
    return {"ok": True}


@app.get("/crash", operation_id="crash", summary="Kills its own process")
async def crash():
    os._exit(7)


@app.get("/exit", operation_id="exit_now", summary="Raises SystemExit")
async def exit_now():
    sys.exit(3)


@app.get("/env", operation_id="env", summary="Names of the environment variables")
async def env():
    return {"names": sorted(os.environ)}


@app.get("/chatty", operation_id="chatty", summary="Writes garbage to stdout")
async def chatty():
    print("hello from scenario code")
    sys.stdout.write("\\x00\\x00\\x00\\xff not a frame")
    sys.stdout.flush()
    return {"ok": True}
'''

COUNT_AT_LEAST = '''def verify_task_completion(initial_db_path, final_db_path):
    import sqlite3
    conn = sqlite3.connect(final_db_path)
    n = conn.execute("SELECT COUNT(*) FROM items").fetchone()[0]
    return {"result": "complete" if n >= %d else "others"}
'''
RAISES = "def verify_task_completion(initial_db_path, final_db_path):\n    return {'result': 1 / 0}\n"
WRITES = ("def verify_task_completion(final_db_path):\n    import sqlite3\n    c = sqlite3.connect(final_db_path)\n"
          "    c.execute('DELETE FROM items')\n    c.commit()\n    return {'result': 'complete'}\n")
SQL_EVIDENCE = ('def verify_task(initial_db_path, final_db_path, final_answer=""):\n    import sqlite3\n'
                '    def n(p):\n        return sqlite3.connect(p).execute("SELECT COUNT(*) FROM items").fetchone()[0]\n'
                '    return {"items_before": n(initial_db_path), "items_after": n(final_db_path)}\n')
SQL_RAW = json.dumps({"reasoning": "One item named 'apple' must be added.",
                      "success_criteria": ["items_after is items_before + 1"],
                      "failure_criteria": ["no new item", "more than one new item"]})

TASKS = ["Add an item named apple.", "Count the items.", "Report the item count (its verifier is broken).",
         "Wait for the server.", "Crash the server.", "Add an item (a verifier that writes)."]


def trap_rows() -> dict[str, list[dict]]:
    trap = scenario_rows(
        "Trap", TRAP_APP,
        tables=[{"name": "items", "ddl": "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL)"},
                {"name": "tags", "ddl": "CREATE TABLE tags (id INTEGER PRIMARY KEY, "
                                        "item_id INTEGER NOT NULL REFERENCES items(id))"}],
        inserts={"items": ["INSERT INTO items (id, name) VALUES (1, 'pear')",
                           "INSERT INTO items (id, name) VALUES (2, 'it\\'s a fig')",
                           "INSERT INTO nowhere VALUES (1)"],
                 "tags": ["INSERT INTO tags (item_id) VALUES (1)", "INSERT INTO tags (item_id) VALUES (99)"]},
        tasks=TASKS,
        code_verifiers={0: COUNT_AT_LEAST % 3, 1: COUNT_AT_LEAST % 1, 2: RAISES, 3: COUNT_AT_LEAST % 3,
                        4: COUNT_AT_LEAST % 3, 5: WRITES},
        sql_verifiers={0: (SQL_EVIDENCE, SQL_RAW)},
    )
    broken = scenario_rows("Broken Import", "import nonexistent_module_xyz\n",
                           tables=[{"name": "t", "ddl": "CREATE TABLE t (id INTEGER)"}], inserts={},
                           tasks=["Anything."], code_verifiers={0: COUNT_AT_LEAST % 0})
    return merge_rows(trap, broken)


SOLUTIONS = [
    {"scenario": "Trap", "task_idx": 0, "steps": [{"tool": "add_item", "arguments": {"name": "apple"}}]},
    {"scenario": "Trap", "task_idx": 1, "steps": [{"tool": "count_items", "arguments": {}}], "final_answer": "2"},
    {"scenario": "Trap", "task_idx": 3, "steps": [{"tool": "hang", "arguments": {}}]},
    {"scenario": "Trap", "task_idx": 4, "steps": [{"tool": "crash", "arguments": {}}]},
    {"scenario": "Trap", "task_idx": 5, "steps": [{"tool": "add_item", "arguments": {"name": "kiwi"}}]},
]


def write_trap_dataset(out: Path) -> Path:
    write_dataset(out, trap_rows())
    with (out / "gen_tasks.jsonl").open("a", encoding="utf-8") as fh:
        fh.write("{this row is not json\n")
    (out / "solutions.json").write_text(json.dumps(SOLUTIONS), encoding="utf-8")
    return out


