DROP TRIGGER web_visitors_live_insert ON web_visitors;
DROP TRIGGER web_visitors_live_update ON web_visitors;
DROP TRIGGER web_visitors_live_delete ON web_visitors;
DROP FUNCTION web_live_counts_move();
DROP TABLE web_live_horizon;
DROP TABLE web_live_counts;
