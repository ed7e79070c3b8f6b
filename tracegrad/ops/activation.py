"""(being written)"""
FUNCTIONS = {}
METHODS = {}
