"""The Penn Treebank bench (bench/ptb.py is its command line), one job per module:

* corpus:  the splits and the vocabulary
* models:  Zaremba's small configuration (a Budget: ModelSettings and Settings), the models, the runs
           at a lower rate
* training: the learning rate of each epoch, the resumable runs and their records
* growth:  how large the RANs' memory cells grow along the stream
* speed:   what makes training faster (each variant timed in its own process)
* papers:  the papers' published numbers, and how this setup differs from theirs
* tables:  the results page, rebuilt from the records
* figure:  the valid perplexity per epoch
"""
