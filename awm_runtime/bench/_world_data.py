"""A synthetic AWM scenario the size of a real one, written the way the AWM generator writes them.

`tables` entity tables (each row links to the previous table), seeded with ~6.5 INSERTs each,
and `tools` endpoints: a list for every table, then get-by-id and create, table by table.
FastAPI + SQLAlchemy ORM + Pydantic v2, async endpoints with summary, description, tags,
operation_id and response_model, the engine from DATABASE_PATH, and a uvicorn main block.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from awm_runtime.worlds import merge_rows, scenario_rows, write_dataset

NAMES = ["projects", "tasks", "comments", "labels", "milestones", "teams", "members", "invoices", "payments",
         "customers", "orders", "products", "shipments", "tickets", "articles", "events", "venues", "bookings",
         "reviews", "coupons", "devices", "alerts", "reports", "budgets", "vendors"]
STATUSES = ("open", "active", "closed")

HEADER = '''import os
from typing import List, Optional
from datetime import datetime

from fastapi import FastAPI, Query, Path, Body
from pydantic import BaseModel, Field, ConfigDict
from sqlalchemy import create_engine, Column, Integer, String, Float, DateTime, ForeignKey, func
from sqlalchemy.orm import declarative_base, sessionmaker

engine = create_engine(os.getenv("DATABASE_PATH", "sqlite:///bench.db"), connect_args={"check_same_thread": False})
SessionLocal = sessionmaker(bind=engine, expire_on_commit=False)
Base = declarative_base()
app = FastAPI(title="Bench Suite", description="A synthetic scenario for awm-bench.", version="1.0.0")
'''

MODEL = '''

class {cls}(Base):
    __tablename__ = "{table}"
    id = Column(Integer, primary_key=True)
    name = Column(String, nullable=False)
    status = Column(String, nullable=False, default="open")
    amount = Column(Float, nullable=False, default=0.0)
    parent_id = Column(Integer{fk}, nullable=True)
    created_at = Column(DateTime, nullable=False, default=func.now())


class {cls}Out(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: int = Field(..., description="{singular} id")
    name: str = Field(..., description="Name")
    status: str = Field(..., description="Status: open, active or closed")
    amount: float = Field(..., description="Amount in USD")
    parent_id: Optional[int] = Field(None, description="Parent record id")


class {cls}List(BaseModel):
    items: List[{cls}Out] = Field(..., description="Matching {table}")
    total: int = Field(..., description="How many matched")


class {cls}Create(BaseModel):
    name: str = Field(..., min_length=1, description="Name of the new {singular}")
    status: str = Field("open", description="Initial status")
    amount: float = Field(0.0, ge=0, description="Amount in USD")
    parent_id: Optional[int] = Field(None, description="Parent record id")
'''

LIST = '''

@app.get("/api/{table}", summary="List {table}", description="List {table}, optionally filtered by status or name.",
         tags=["{table}"], operation_id="list_{table}", response_model={cls}List)
async def list_{table}(status: Optional[str] = Query(None, description="Exact status"),
                       name: Optional[str] = Query(None, description="Substring of the name"),
                       limit: int = Query(50, ge=1, le=200, description="At most this many")):
    session = SessionLocal()
    query = session.query({cls})
    if status:
        query = query.filter({cls}.status == status)
    if name:
        query = query.filter({cls}.name.ilike(f"%{{name}}%"))
    rows = query.order_by({cls}.id).limit(limit).all()
    out = {cls}List(items=[{cls}Out.model_validate(r) for r in rows], total=len(rows))
    session.close()
    return out
'''

GET = '''

@app.get("/api/{table}/{{item_id}}", summary="Get a {singular}", description="Fetch one {singular} by id.",
         tags=["{table}"], operation_id="get_{singular}", response_model={cls}Out)
async def get_{singular}(item_id: int = Path(..., description="{singular} id")):
    session = SessionLocal()
    row = session.query({cls}).filter({cls}.id == item_id).first()
    out = {cls}Out.model_validate(row)
    session.close()
    return out
'''

CREATE = '''

@app.post("/api/{table}", summary="Create a {singular}", description="Create a {singular}.", tags=["{table}"],
          operation_id="create_{singular}", response_model={cls}Out)
async def create_{singular}(body: {cls}Create = Body(...)):
    session = SessionLocal()
    row = {cls}(name=body.name, status=body.status, amount=body.amount, parent_id=body.parent_id)
    session.add(row)
    session.commit()
    session.refresh(row)
    out = {cls}Out.model_validate(row)
    session.close()
    return out
'''

# `awm-bench world --inject-ms`: a known CPU cost in each request, as a pure ASGI middleware (a few
# microseconds of its own, where Starlette's BaseHTTPMiddleware would add its own task per request).
BURN = '''

class _Burn:
    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            import time
            end = time.thread_time() + {seconds!r}
            while time.thread_time() < end:
                pass
        await self.app(scope, receive, send)


app.add_middleware(_Burn)
'''

FOOTER = '''

if __name__ == "__main__":
    import uvicorn
    uvicorn.run(app, host=os.getenv("HOST", "127.0.0.1"), port=int(os.getenv("PORT", "8000")))
'''

VERIFIER = '''def verify_task_completion(initial_db_path: str, final_db_path: str, final_answer: str = "") -> dict:
    import sqlite3
{burn}
    def names(path):
        conn = sqlite3.connect(f"file:{{path}}?mode=ro", uri=True)
        rows = conn.execute("SELECT name FROM {table} WHERE name = ?", ("{name}",)).fetchall()
        conn.close()
        return rows

    return {{"result": "complete" if not names(initial_db_path) and names(final_db_path) else "others"}}
'''


def _singular(table: str) -> str:
    return table[:-1]


def _verifier_burn(burn_ms: float) -> str:
    if burn_ms <= 0:
        return ""
    return (f"    import time\n\n    end = time.thread_time() + {burn_ms / 1000!r}\n"
            "    while time.thread_time() < end:\n        pass\n")


def synthetic_rows(tables: int = 20, tools: int = 35, name: str = "Bench Suite",
                   burn_ms: float = 0.0) -> dict[str, list[dict[str, Any]]]:
    """The scenario's rows; `burn_ms` > 0 adds that much CPU to each tool call and to each verification."""
    tables = max(1, min(tables, len(NAMES)))
    names = NAMES[:tables]
    code = [HEADER]
    for i, table in enumerate(names):
        fk = f', ForeignKey("{names[i - 1]}.id")' if i else ""
        code.append(MODEL.format(cls=table.title(), table=table, singular=_singular(table), fk=fk))
    kinds = [(LIST, t) for t in names] + [(kind, t) for t in names for kind in (GET, CREATE)]
    for template, table in kinds[:tools]:
        code.append(template.format(cls=table.title(), table=table, singular=_singular(table)))
    if burn_ms > 0:
        code.append(BURN.format(seconds=burn_ms / 1000))
    code.append(FOOTER)
    ddl = []
    inserts: dict[str, list[str]] = {}
    for i, table in enumerate(names):
        ref = f" REFERENCES {names[i - 1]}(id)" if i else ""
        ddl.append({"name": table, "ddl": f"CREATE TABLE {table} (id INTEGER PRIMARY KEY, name TEXT NOT NULL, "
                                          "status TEXT NOT NULL DEFAULT 'open', amount REAL NOT NULL DEFAULT 0, "
                                          f"parent_id INTEGER{ref}, created_at DATETIME NOT NULL DEFAULT "
                                          "CURRENT_TIMESTAMP)",
                    "indexes": [f"CREATE INDEX idx_{table}_status ON {table}(status)"]})
        inserts[table] = [
            f"INSERT INTO {table} (id, name, status, amount, parent_id, created_at) VALUES "
            f"({j}, '{_singular(table)} {j}', '{STATUSES[j % 3]}', {j * 12.5}, {j if i else 'NULL'}, "
            f"datetime('now', '-{j} days'))" for j in range(1, 7 + (i % 2))]
    creatable = [t for kind, t in kinds[:tools] if kind is CREATE] or names[:1]
    tasks, verifiers = [], {}
    for k in range(10):
        table = creatable[k % len(creatable)]
        item = f"bench item {k}"
        tasks.append(f"Create a {_singular(table)} named '{item}'.")
        verifiers[k] = VERIFIER.format(table=table, name=item, burn=_verifier_burn(burn_ms))
    return scenario_rows(name, "".join(code), tables=ddl, inserts=inserts, tasks=tasks, code_verifiers=verifiers)


CRASHY = '''import os
from fastapi import FastAPI
from sqlalchemy import create_engine
engine = create_engine(os.getenv("DATABASE_PATH", "sqlite:///crashy.db"))
app = FastAPI(title="Crashy")


@app.get("/ok", operation_id="ok", summary="Fine")
async def ok():
    return {"ok": True}


@app.get("/crash", operation_id="crash", summary="Kills its process")
async def crash():
    os._exit(9)
'''


def write_bench_dataset(out: Path, *, tables: int = 20, tools: int = 35, burn_ms: float = 0.0) -> Path:
    """The synthetic scenario, plus `crashy` (a handler that kills its worker) for the isolation figure."""
    crashy = scenario_rows("Crashy", CRASHY, tables=[{"name": "t", "ddl": "CREATE TABLE t (id INTEGER)"}],
                           inserts={}, tasks=["Crash."])
    write_dataset(out, merge_rows(synthetic_rows(tables, tools, burn_ms=burn_ms), crashy))
    return out
