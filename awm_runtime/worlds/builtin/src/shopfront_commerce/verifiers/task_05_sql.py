def verify_task(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def query(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        rows = [dict(r) for r in conn.execute(sql, params).fetchall()]
        conn.close()
        return rows

    sql = ("SELECT v.id, v.sku, v.name, v.stock_quantity FROM product_variants v JOIN products p ON p.id = v.product_id "
           "WHERE p.name = 'Merino Crew Sweater' ORDER BY v.id")
    before = query(initial_db_path, sql)
    after = query(final_db_path, sql)
    return {
        "variants_before": before,
        "variants_after": after,
        "expected_total_stock": sum(r["stock_quantity"] for r in before),
        "final_answer": final_answer,
    }
