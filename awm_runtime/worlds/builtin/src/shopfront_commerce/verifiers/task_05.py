def verify_task_completion(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3
    import re

    def query(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        rows = conn.execute(sql, params).fetchall()
        conn.close()
        return rows

    sql = ("SELECT v.id, v.stock_quantity FROM product_variants v JOIN products p ON p.id = v.product_id "
           "WHERE p.name = 'Merino Crew Sweater' ORDER BY v.id")
    before = query(initial_db_path, sql)
    after = query(final_db_path, sql)
    if not before or before != after:
        return {"result": "others"}
    expected = sum(r[1] for r in before)
    text = (final_answer or "").replace(",", "")
    numbers = []
    for tok in re.findall(r"-?\d+(?:\.\d+)?", text):
        value = float(tok)
        if value == int(value):
            numbers.append(int(value))
    if expected not in numbers:
        return {"result": "others"}
    return {"result": "complete"}
