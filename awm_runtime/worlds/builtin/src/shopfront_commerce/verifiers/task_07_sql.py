def verify_task(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def query(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        rows = [dict(r) for r in conn.execute(sql, params).fetchall()]
        conn.close()
        return rows

    order_sql = ("SELECT o.id, o.order_number, o.status, o.shipping_address_id, cp.code AS coupon_code, o.subtotal, "
                 "o.discount_total, o.shipping_total, o.tax_total, o.total FROM orders o "
                 "JOIN customers c ON c.id = o.customer_id LEFT JOIN coupons cp ON cp.id = o.coupon_id "
                 "WHERE c.first_name = 'Daniel' AND c.last_name = 'Okafor' ORDER BY o.id")
    before_orders = query(initial_db_path, order_sql)
    after_orders = query(final_db_path, order_sql)
    before_ids = {o["id"] for o in before_orders}
    new_ids = [o["id"] for o in after_orders if o["id"] not in before_ids]
    items, payments = [], []
    for oid in new_ids:
        items += query(final_db_path, "SELECT order_id, sku, variant_name, quantity, unit_price, line_total FROM order_items WHERE order_id = ?", (oid,))
        payments += query(final_db_path, "SELECT order_id, method, amount, status FROM payments WHERE order_id = ?", (oid,))
    stock_sql = "SELECT sku, price, stock_quantity FROM product_variants WHERE sku IN ('AER-BUD-WHT', 'CER-POS-SND')"
    coupon_sql = "SELECT code, times_redeemed FROM coupons WHERE code = 'WELCOME10'"
    cart_sql = ("SELECT k.id, k.status, cp.code AS coupon_code FROM carts k JOIN customers c ON c.id = k.customer_id "
                "LEFT JOIN coupons cp ON cp.id = k.coupon_id WHERE c.first_name = 'Daniel' AND c.last_name = 'Okafor'")
    return {
        "default_address": query(initial_db_path, "SELECT a.id, a.label, a.line1 FROM addresses a JOIN customers c ON c.id = a.customer_id WHERE c.first_name = 'Daniel' AND c.last_name = 'Okafor' AND a.is_default = 1"),
        "daniel_orders_before": before_orders,
        "daniel_orders_after": after_orders,
        "new_order_items": items,
        "new_order_payments": payments,
        "stock_before": query(initial_db_path, stock_sql),
        "stock_after": query(final_db_path, stock_sql),
        "coupon_before": query(initial_db_path, coupon_sql),
        "coupon_after": query(final_db_path, coupon_sql),
        "daniel_carts_after": query(final_db_path, cart_sql),
        "final_answer": final_answer,
    }
