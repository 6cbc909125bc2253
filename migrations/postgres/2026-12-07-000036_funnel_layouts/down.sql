DROP TABLE web_funnel_layouts;
