"""rows"""
