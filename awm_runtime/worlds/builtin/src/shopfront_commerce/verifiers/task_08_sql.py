def verify_task(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def query(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        rows = [dict(r) for r in conn.execute(sql, params).fetchall()]
        conn.close()
        return rows

    order_sql = "SELECT id, order_number, status, total FROM orders WHERE order_number = 'SF-10007'"
    pay_sql = "SELECT p.id, p.method, p.amount, p.status FROM payments p JOIN orders o ON o.id = p.order_id WHERE o.order_number = 'SF-10007'"
    ref_sql = "SELECT r.id, r.payment_id, r.amount, r.reason, r.status, r.processed_by_user_id FROM refunds r JOIN orders o ON o.id = r.order_id WHERE o.order_number = 'SF-10007'"
    stock_sql = ("SELECT oi.sku, oi.quantity AS ordered_qty, v.stock_quantity FROM order_items oi "
                 "JOIN orders o ON o.id = oi.order_id JOIN product_variants v ON v.id = oi.variant_id "
                 "WHERE o.order_number = 'SF-10007' ORDER BY oi.id")
    coupon_sql = "SELECT code, discount_type, discount_value, min_order_total, max_redemptions, is_active FROM coupons WHERE UPPER(code) LIKE '%SORRY%'"
    return {
        "order_before": query(initial_db_path, order_sql),
        "order_after": query(final_db_path, order_sql),
        "payments_before": query(initial_db_path, pay_sql),
        "payments_after": query(final_db_path, pay_sql),
        "refunds_before": query(initial_db_path, ref_sql),
        "refunds_after": query(final_db_path, ref_sql),
        "item_stock_before": query(initial_db_path, stock_sql),
        "item_stock_after": query(final_db_path, stock_sql),
        "sorry_coupons_before": query(initial_db_path, coupon_sql),
        "sorry_coupons_after": query(final_db_path, coupon_sql),
        "final_answer": final_answer,
    }
