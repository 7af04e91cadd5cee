def verify_task(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def query(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        rows = [dict(r) for r in conn.execute(sql, params).fetchall()]
        conn.close()
        return rows

    var_sql = "SELECT id, sku, name, stock_quantity FROM product_variants WHERE sku = 'AER-BUD-WHT'"
    adj_sql = ("SELECT a.id, a.delta, a.reason, a.note, a.created_by_user_id FROM inventory_adjustments a "
               "JOIN product_variants v ON v.id = a.variant_id WHERE v.sku = 'AER-BUD-WHT' ORDER BY a.id")
    changed_sql = "SELECT id, sku, stock_quantity FROM product_variants ORDER BY id"
    before_all = {r["id"]: r for r in query(initial_db_path, changed_sql)}
    after_all = {r["id"]: r for r in query(final_db_path, changed_sql)}
    changed = [{"sku": after_all[i]["sku"], "before": before_all[i]["stock_quantity"], "after": after_all[i]["stock_quantity"]}
               for i in after_all if i in before_all and before_all[i]["stock_quantity"] != after_all[i]["stock_quantity"]]
    return {
        "variant_before": query(initial_db_path, var_sql),
        "variant_after": query(final_db_path, var_sql),
        "adjustments_before": query(initial_db_path, adj_sql),
        "adjustments_after": query(final_db_path, adj_sql),
        "all_stock_changes": changed,
        "final_answer": final_answer,
    }
