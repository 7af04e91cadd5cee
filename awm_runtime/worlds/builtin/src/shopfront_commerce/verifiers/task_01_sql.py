def verify_task(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def query(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        rows = [dict(r) for r in conn.execute(sql, params).fetchall()]
        conn.close()
        return rows

    sql = ("SELECT v.id, v.product_id, p.name AS product_name, v.sku, v.name, v.price, v.stock_quantity, v.is_active "
           "FROM product_variants v JOIN products p ON p.id = v.product_id WHERE p.name = 'Trailblazer Rain Jacket' "
           "OR UPPER(v.sku) = 'TRL-JKT-L-GRN' ORDER BY v.id")
    return {
        "trailblazer_variants_before": query(initial_db_path, sql),
        "trailblazer_variants_after": query(final_db_path, sql),
        "final_answer": final_answer,
    }
