"""Pages of at most 200 rows (`?limit=&offset=`, 50 by default): no list is unbounded."""

from rest_framework.pagination import LimitOffsetPagination


class Pages(LimitOffsetPagination):
    default_limit = 50
    max_limit = 200
