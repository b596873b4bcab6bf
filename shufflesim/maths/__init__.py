"""maths"""
