"""Reading times: a reading table's checks, spillover, folds, held-out likelihoods, ΔLL, word
frequency, a user's word list.
"""
