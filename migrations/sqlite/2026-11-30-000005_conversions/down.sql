DROP TABLE conversion_days; DROP TABLE conversions;
