def verify_task_completion(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3
    import re

    def query(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        rows = conn.execute(sql, params).fetchall()
        conn.close()
        return rows

    prod = query(final_db_path, "SELECT id FROM products WHERE name = 'Trailblazer Rain Jacket'")
    if len(prod) != 1:
        return {"result": "others"}
    product_id = prod[0][0]
    sql = "SELECT product_id, name, price, stock_quantity, is_active FROM product_variants WHERE UPPER(TRIM(sku)) = 'TRL-JKT-L-GRN'"
    before = query(initial_db_path, sql)
    after = query(final_db_path, sql)
    if before or len(after) != 1:
        return {"result": "others"}
    pid, name, price, stock, active = after[0]
    if pid != product_id or stock != 12 or active != 1:
        return {"result": "others"}
    if price is None or abs(float(price) - 119.0) > 0.005:
        return {"result": "others"}
    label = (name or "").lower()
    if "forest green" not in label or not re.search(r"(\bl\b|large)", label):
        return {"result": "others"}
    n_before = query(initial_db_path, "SELECT COUNT(*) FROM product_variants WHERE product_id = ?", (product_id,))[0][0]
    n_after = query(final_db_path, "SELECT COUNT(*) FROM product_variants WHERE product_id = ?", (product_id,))[0][0]
    if n_after != n_before + 1:
        return {"result": "others"}
    return {"result": "complete"}
